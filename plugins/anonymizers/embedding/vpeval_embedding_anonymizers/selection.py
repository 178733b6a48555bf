"""Selection-based pseudo-speaker (VoicePrivacy B1, Srivastava et al.; the 'Se' system of seed 003).

For a source vector: rank the pool speakers by cosine similarity, keep the `farthest` least similar
(B1: 200 of the 1,160 LibriTTS-other-500 speakers, same gender), average `select` of them drawn at
random (B1: 100). B1 ranks with PLDA; here cosine, so no PLDA model has to be trained. Smaller pools
keep B1's fractions but average at least `min_averaged` speakers where the pool has them: averaging
is what makes a selection pseudo-speaker (seed 003 blames it for Se's behaviour).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Voice
from vpeval.speakers import POOL_SEED, CorpusSpec, PoolEmbeddings
from vpeval_embedding_anonymizers.base import EmbeddingAnonymizer, PoolParams

B1_POOL_SIZE = 1160  # LibriTTS train-other-500 speakers, the pool the B1 counts refer to
MIN_AVERAGED = 5
# 120 synth speakers (about 60 per gender) give B1's fractions 10 farthest / 5 averaged per gender
# without the minimum stepping in; 3 short utterances each keep generation and embedding near 30 s.
SELECTION_POOL = {"preset": "tiny", "speakers": 120, "utterances": 3, "seed": POOL_SEED}


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def selection_counts(pool_size: int, farthest: int, select: int, min_averaged: int = MIN_AVERAGED) -> tuple[int, int]:
    """(farthest, select) for a pool: the given counts when the pool is large enough, otherwise the
    same fractions of the pool as B1 uses of its 1,160 speakers, averaging at least
    min(min_averaged, select, pool) speakers drawn from at least twice as many candidates (B1's 2:1)
    where the pool has them."""
    if pool_size >= farthest:
        return farthest, min(select, farthest)
    n_far = max(1, int(round(pool_size * farthest / B1_POOL_SIZE)))
    n_sel = max(1, int(round(n_far * select / farthest)))
    n_sel = max(n_sel, min(min_averaged, select, pool_size))
    n_far = min(pool_size, max(n_far, 2 * n_sel))
    return n_far, min(n_sel, n_far)


def farthest_speakers(source: np.ndarray, means: np.ndarray, count: int) -> np.ndarray:
    """Indices of the `count` pool speakers least cosine-similar to the source vector."""
    sims = unit(means) @ unit(source)
    return np.argsort(sims, kind="stable")[:count]


class Selection(EmbeddingAnonymizer):
    """Pseudo-speaker = mean of random pool speakers among those farthest from the source (VPC B1)."""

    name: ClassVar[str] = "selection"

    class Params(PoolParams):
        """B1 defaults: 200 farthest, 100 averaged, same gender as the source."""

        pool: CorpusSpec = Field(
            default_factory=lambda: CorpusSpec(use="synth", params=dict(SELECTION_POOL)),
            description="Pool corpus {use, params} (default: 120 synth speakers x 3 utterances, own seed: "
            "enough for B1's fractions to average 5 speakers per gender).",
        )

        farthest: int = Field(
            200, ge=1, le=100_000, description="How many least-similar pool speakers form the candidate set."
        )
        select: int = Field(
            100, ge=1, le=100_000, description="How many candidates (drawn from the voice's rng) are averaged."
        )
        same_gender: bool = Field(
            True, description="Restrict the pool to the source's gender when both are known (B1 does)."
        )
        min_averaged: int = Field(
            MIN_AVERAGED,
            ge=1,
            le=100_000,
            description="When the pool is smaller than `farthest`, average at least this many speakers "
            "(or select, or the whole pool, if fewer).",
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
        self._logged_counts: set[tuple[int, int, int]] = set()

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

    def counts(self, voice: Voice) -> tuple[int, int, int]:
        """(candidate pool size, farthest kept, speakers averaged) for this voice; logged once per size."""
        p = self.params
        allowed = len(self.candidates(voice))
        counts = (allowed, *selection_counts(allowed, p.farthest, p.select, p.min_averaged))
        if counts not in self._logged_counts:
            self._logged_counts.add(counts)
            self.context.log.info("selection: pool of %d candidate speakers: %d farthest kept, %d averaged", *counts)
        return counts

    def chosen_speakers(self, source: np.ndarray, voice: Voice) -> np.ndarray:
        """Indices (into pool.speaker_ids) of the pool speakers averaged into this voice's pseudo-speaker."""
        allowed = self.candidates(voice)
        _, n_far, n_sel = self.counts(voice)
        far = allowed[farthest_speakers(source, self.pool.speaker_means[allowed], n_far)]
        return voice.rng.choice(far, size=n_sel, replace=False)

    def pseudo_vector(self, source: np.ndarray, voice: Voice) -> np.ndarray:
        mean = self.pool.speaker_means[self.chosen_speakers(source, voice)].mean(axis=0)
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
