"""fbank-rvq: a codec-like frontend, residual VQ with eight codebooks over filterbank frames."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Frontend, Params
from vpeval.errors import DataError
from vpeval.types import Corpus, FrontendOutput
from vpeval_cpu_frontends.fbank import log_mel, stack
from vpeval_cpu_frontends.quantizers import encode_residual, fit_residual, subsample


class FbankRvqFrontend(Frontend):
    """fbank-rvq: codec-like tokens, eight residual codebooks over stacked log-mel frames.

    Interface (seed 002's codec frontends, Mimi/Higgs style): 16 kHz audio in; out tokens [N, Q]
    (Q = num_codebooks, default 8, each of codebook_size entries, default 256) and nothing else, as
    Mimi and Higgs expose (expose: tokens, the default). expose: tokens+features also hands out the
    stacked 80-band log-mel frames they quantize as features [N, 80 * 100 / frame_rate]: the raw
    spectrum, which no codec frontend exposes, so an attack on it is not a token attack. frame_rate 25
    (Higgs' rate, 4 stacked 10 ms frames) or 12.5 (Mimi's rate, 8 frames); N = ceil(seconds * rate).

    Like a codec's residual vector quantizer, stage q's codebook is learned by k-means on what
    stages before q left unexplained; frames are standardized with the fit corpus' mean and
    standard deviation first. Everything is learned in fit() from the attacker-train corpus,
    seeded by the experiment seed, and stored by save() (rvq.npz). A neural codec learns its
    encoder too; here the encoder is the fixed filterbank, so no weights are needed.
    codebook_size 256 keeps fit() to seconds on one core (Mimi and Higgs use 2048 and 1024).
    """

    name = "fbank-rvq"
    sample_rate = 16000
    frame_rate = 25.0

    class Params(Params):
        num_codebooks: int = Field(
            8, ge=1, le=64, description="Residual VQ stages (tokens per frame), as Mimi and Higgs."
        )
        codebook_size: int = Field(256, ge=2, le=65536, description="Codewords per stage, learned by k-means in fit().")
        frame_rate: float = Field(
            25.0,
            gt=0.0,
            le=100.0,
            description="Token rate in frames/s, 100 divided by a whole number: 25 (Higgs) or 12.5 (Mimi).",
        )
        mel_bands: int = Field(80, ge=8, le=128, description="Log-mel filterbank bands per 10 ms frame (25 ms window).")
        max_fit_frames: int = Field(60000, ge=1, le=10_000_000, description="At most this many frames feed k-means.")
        expose: Literal["tokens", "tokens+features"] = Field(
            "tokens",
            description="tokens: the RVQ tokens only, as Mimi and Higgs expose; tokens+features: also the stacked "
            "log-mel frames they quantize (not a codec's interface).",
        )

        @field_validator("frame_rate")
        @classmethod
        def _divides_100(cls, value):
            if abs(round(100 / value) * value - 100) > 1e-6:
                raise ValueError(
                    f"frame_rate must divide the 100 frames/s of the filterbank evenly (25, 12.5, ...), got {value}"
                )
            return value

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.frame_rate = float(self.params.frame_rate)
        self.stack_factor = int(round(100 / self.frame_rate))  # Params checked that it divides evenly
        self.books: np.ndarray | None = None
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None

    def _features(self, audio: np.ndarray) -> np.ndarray:
        return stack(
            log_mel(np.asarray(audio, dtype=np.float32), self.sample_rate, self.params.mel_bands), self.stack_factor
        )

    def fit(self, corpus: Corpus) -> None:
        if len(corpus) == 0:
            raise DataError("The fbank-rvq frontend got an empty corpus to fit its codebooks on; give fit() speech.")
        # Filterbanks of every utterance with the run's workers, concatenated in corpus order.
        features = self.context.map(
            lambda u: self._features(u.load(self.sample_rate)), corpus.utterances, "fbank-rvq: features"
        )
        frames = np.concatenate(features)
        self.mean = frames.mean(axis=0)
        self.std = np.maximum(frames.std(axis=0), 1e-3)
        rng = self.context.rng("fbank-rvq", "codebooks")
        frames = subsample((frames - self.mean) / self.std, self.params.max_fit_frames, rng)
        # k-means is this stage's only work: its matrix products may use every core the run has. OpenBLAS
        # splits a product's rows and columns between threads, each element summed by one thread in the
        # same order, so the codebooks are the same bits with any thread count (test).
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=max(1, self.context.threads, self.context.workers), user_api="blas"):
            self.books = fit_residual(frames, self.params.num_codebooks, self.params.codebook_size, rng, "fbank-rvq")

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        if self.books is None:
            raise RuntimeError("fbank-rvq: call fit() or load() before encode(); its codebooks are learned.")
        feats = self._features(audio)
        tokens = encode_residual((feats - self.mean) / self.std, self.books)
        features = feats if self.params.expose == "tokens+features" else None
        return FrontendOutput(self.frame_rate, tokens, (self.books.shape[1],) * len(self.books), features)

    def save(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        np.savez(Path(folder) / "rvq.npz", books=self.books, mean=self.mean, std=self.std)

    def load(self, folder: Path) -> None:
        with np.load(Path(folder) / "rvq.npz", allow_pickle=False) as data:
            self.books, self.mean, self.std = data["books"], data["mean"], data["std"]
