"""Selection-based pseudo-speaker (VoicePrivacy B1, Srivastava et al.; the 'Se' system of seed 003).

For a source vector: rank the pool speakers by cosine similarity, keep the `farthest` least similar
(B1: 200 of the 1,160 LibriTTS-other-500 speakers, same gender), average `select` of them drawn at
random (B1: 100). B1 ranks with PLDA; here cosine, so no PLDA model has to be trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Voice
from vpeval.speakers import PoolEmbeddings

from vpeval_embedding_anonymizers.base import EmbeddingAnonymizer, PoolParams

B1_POOL_SIZE = 1160  # LibriTTS train-other-500 speakers, the pool the B1 counts refer to


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def selection_counts(pool_size: int, farthest: int, select: int) -> tuple[int, int]:
    """(farthest, select) for a pool: the given counts when the pool is large enough, otherwise the
    same fractions of the pool as B1 uses of its 1,160 speakers (at least one of each)."""
    if pool_size >= farthest:
        return farthest, min(select, farthest)
    n_far = max(1, int(round(pool_size * farthest / B1_POOL_SIZE)))
    n_sel = max(1, int(round(n_far * select / farthest)))
    return n_far, n_sel


def farthest_speakers(source: np.ndarray, means: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` pool speakers least cosine-similar to the source vector."""
    sims = unit(means) @ unit(source)
    return np.argsort(sims, kind="stable")[:count]


class Selection(EmbeddingAnonymizer):
    """Pseudo-speaker = mean of random pool speakers among those farthest from the source (VPC B1)."""

    name: ClassVar[str] = "selection"

    class Params(PoolParams):
        """B1 defaults: 200 farthest, 100 averaged, same gender as the source."""

        farthest: int = Field(200, ge=1, le=100_000, description="How many least-similar pool speakers form the candidate set.")
        select: int = Field(100, ge=1, le=100_000, description="How many candidates (drawn from the voice's rng) are averaged.")
        same_gender: bool = Field(
            True, description="Restrict the pool to the source's gender when both are known (B1 does)."
        )

        @field_validator("select")
        @classmethod
        def _check(cls, value, info):  # a ValueError, so the config layer names the file, line and field
            farthest = info.data.get("farthest")
            if farthest is not None and value > farthest:
                raise ValueError(f"select ({value}) must not exceed farthest ({farthest})")
            return value

    def fit(self, pool: PoolEmbeddings) -> None:
        self.pool = pool

    @property
    def dim(self) -> int:
        return self.pool.speaker_means.shape[1]

    def candidates(self, voice: Voice) -> np.ndarray:
        """Pool speaker indices allowed for this voice (same gender where known)."""
        everyone = np.arange(len(self.pool.speaker_ids))
        gender = voice.utterance.gender if voice.utterance is not None else None
        if not self.params.same_gender or not gender:
            return everyone
        same = np.array([g == gender for g in self.pool.speaker_genders])
        return everyone[same] if same.any() else everyone

    def pseudo_vector(self, source: np.ndarray, voice: Voice) -> np.ndarray:
        allowed = self.candidates(voice)
        n_far, n_sel = selection_counts(len(allowed), self.params.farthest, self.params.select)
        far = allowed[farthest_speakers(source, self.pool.speaker_means[allowed], n_far)]
        chosen = voice.rng.choice(far, size=n_sel, replace=False)
        mean = self.pool.speaker_means[chosen].mean(axis=0)
        # Keep the source's norm: encoders compare directions, vocoders expect the usual scale.
        return unit(mean) * np.linalg.norm(source)

    def transform(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        # At speaker level B1 ranks the pool against the speaker-level vector: rows that share a
        # speaker key use their mean, so the speaker gets one pseudo-speaker.
        sources = embeddings.copy()
        keys = [v.key for v in voices]
        for key in {k for k, v in zip(keys, voices, strict=True) if v.level == "speaker"}:
            rows = [i for i, k in enumerate(keys) if k == key]
            sources[rows] = unit(embeddings[rows]).mean(axis=0) * np.linalg.norm(embeddings[rows], axis=1).mean()
        return np.stack([self.pseudo_vector(x, v) for x, v in zip(sources, voices, strict=True)])
