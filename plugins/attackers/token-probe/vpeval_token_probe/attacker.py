"""token-probe: a linear speaker probe on a frontend's tokens and features."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import Field

from vpeval.api import Attacker, Params
from vpeval.content_cache import cached_batches, cached_map, identity_digest, source_digest
from vpeval.errors import DataError
from vpeval.types import FrontendOutput, TrainingData, Utterance
from vpeval_token_probe.projection import fit_projection, project
from vpeval_token_probe.statistics import layout, utterance_statistics

GPU_BATCH = 32  # utterances per frontend encode_batch call when the frontend runs on a GPU


class TokenProbe(Attacker):
    """Token-probe: codebook-usage histograms + feature moments, PCA + LDA, cosine scoring.

    The simple baseline a speaker inversion attack (seed 002's SpInv) must beat. Each utterance
    goes through the experiment's frontend; its vector is the normalised token histogram of every
    codebook, concatenated with the mean (and standard deviation) of the continuous features where
    the frontend exposes them. Vectors are standardized, reduced by PCA (whitened) and projected by
    LDA learned on the attacker-train speakers; a side of N utterances is the mean of its
    utterances' length-normalised projections, and sides are compared by cosine similarity.
    Works on any frontend (tokens only, features only, or both).
    """

    name = "token-probe"
    uses_frontend = True
    needs_training = True
    sample_rate = 16000  # nominal: audio is read at the frontend's own rate

    class Params(Params):
        pca_dim: int = Field(
            200, ge=1, le=8192, description="PCA dimensions kept before LDA (capped at utterances minus speakers)."
        )
        lda_dim: int = Field(150, ge=1, le=8192, description="LDA output dimensions (capped at speakers minus one).")
        feature_std: bool = Field(True, description="Append the per-dimension standard deviation of the features.")

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.weight: np.ndarray | None = None
        self.bias: np.ndarray | None = None
        self.layout: dict | None = None
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    def _require_frontend(self):
        if self.frontend is None:
            raise DataError("token-probe attacks a frontend; name one in the experiment (frontend: <name>).")
        return self.frontend

    def _encode(self, utterance: Utterance) -> FrontendOutput:
        frontend = self._require_frontend()
        return frontend.encode(utterance.load(frontend.sample_rate))

    def _statistics(self, utterance: Utterance) -> np.ndarray:
        return self._statistics_many([utterance])[0]

    def _statistics_many(self, utterances: Sequence[Utterance]) -> list[np.ndarray]:
        """Statistics vectors of the utterances: remembered, from the run's content cache, or computed
        with the run's workers (forked: they share the fitted frontend)."""
        todo = list({_key(u): u for u in utterances if _key(u) not in self._cache}.values())
        if todo:
            if self.layout is None:
                self.layout = layout(self._encode(todo[0]))
            if self.context.on_gpu:  # the frontend batches on the GPU in this process; CUDA does not survive a fork
                vectors = cached_batches(
                    self.context,
                    todo,
                    self._extractor_identity(),
                    self._compute_statistics_batch,
                    GPU_BATCH,
                    "token-probe: encode",
                )
            else:
                vectors = cached_map(
                    self.context, todo, self._extractor_identity(), self._compute_statistics, "token-probe: encode"
                )
            self._cache.update((_key(u), v) for u, v in zip(todo, vectors))
        return [self._cache[_key(u)] for u in utterances]

    def _compute_statistics(self, utterance: Utterance) -> np.ndarray:
        return self._statistics_of(utterance, self._encode(utterance))

    def _compute_statistics_batch(self, utterances: Sequence[Utterance]) -> list[np.ndarray]:
        """_compute_statistics of many utterances, their audio through one frontend encode_batch call."""
        frontend = self._require_frontend()
        outputs = frontend.encode_batch([u.load(frontend.sample_rate) for u in utterances])
        return [self._statistics_of(u, output) for u, output in zip(utterances, outputs)]

    def _statistics_of(self, utterance: Utterance, output: FrontendOutput) -> np.ndarray:
        if layout(output) != self.layout:
            raise DataError(
                f"The frontend's output for {utterance.path} has codebooks/feature size {layout(output)}, "
                f"but token-probe was trained on {self.layout}; retrain it with this frontend."
            )
        return utterance_statistics(output, self.params.feature_std).astype(np.float32)

    def _extractor_identity(self) -> str:
        """What a statistics vector depends on besides the audio: our code and settings, and the frontend
        (its kind, parameters and the state it saves, e.g. fitted codebooks)."""
        import sys
        import tempfile

        from vpeval_token_probe import statistics

        frontend = self._require_frontend()
        with tempfile.TemporaryDirectory() as folder:
            frontend.save(Path(folder))
            state = [p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()]
        return "token-probe-" + identity_digest(
            source_digest(statistics, sys.modules[__name__]),
            self.params.feature_std,
            type(frontend).__qualname__,
            frontend.distribution,
            frontend.version,
            frontend.params.model_dump_json(),
            *state,
        )

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        self._statistics_many([u for side in sides for u in side])  # every distinct utterance, in parallel
        return super().represent_many(sides)

    def train(self, data: TrainingData) -> None:
        self.context.apply_threads()
        corpus = data.corpus
        if len(corpus) == 0:
            raise DataError("token-probe got no training utterances; the experiment's attacker-train split is empty.")
        vectors = np.stack(self._statistics_many(corpus.utterances))
        speakers = np.array([u.speaker for u in corpus.utterances])
        self.weight, self.bias = fit_projection(
            vectors, speakers, self.params.pca_dim, self.params.lda_dim, self.context.torch_seed("token-probe")
        )

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        if self.weight is None:
            raise RuntimeError("token-probe: train() or load() before represent().")
        vectors = project(np.stack([self._statistics(u) for u in utterances]), self.weight, self.bias)
        side = vectors.mean(axis=0)
        return side / max(float(np.linalg.norm(side)), 1e-12)

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / "projection.npz", weight=self.weight, bias=self.bias)
        (folder / "layout.json").write_text(json.dumps(self.layout))

    def load(self, folder: Path) -> None:
        folder = Path(folder)
        with np.load(folder / "projection.npz", allow_pickle=False) as data:
            self.weight, self.bias = data["weight"], data["bias"]
        saved = json.loads((folder / "layout.json").read_text())
        self.layout = {"codebook_sizes": tuple(saved["codebook_sizes"]), "feature_dim": saved["feature_dim"]}


def _key(utterance: Utterance) -> tuple[str, str]:
    return (utterance.id, utterance.path)
