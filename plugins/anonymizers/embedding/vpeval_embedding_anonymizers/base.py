"""What every embedding anonymizer here shares: pool settings, lazy preparation, input checks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Anonymizer, Params, Voice
from vpeval.errors import DataError
from vpeval.speakers import POOL_SEED, CorpusSpec, EncoderSpec, PoolEmbeddings, load_pool

# The default pool: 20 speakers of the built-in synth corpus with a seed of their own, so the pool is
# speaker-disjoint from an evaluation corpus generated with the experiment seed.
DEFAULT_POOL = {"preset": "tiny", "speakers": 20, "seed": POOL_SEED}


class PoolParams(Params):
    """Where the external speaker pool comes from (speaker-disjoint from the evaluation data)."""

    pool: CorpusSpec = Field(
        default_factory=lambda: CorpusSpec(use="synth", params=dict(DEFAULT_POOL)),
        description="Pool corpus {use, params} (default: 20 synth speakers, own seed).",
    )
    encoder: EncoderSpec = Field(
        default_factory=lambda: EncoderSpec(use="ge2e"),
        description="Speaker encoder {use, params} (default: the pretrained GE2E).",
    )
    pool_vectors: str | None = Field(
        None, description="Precomputed pool .npz (embeddings [U, D], speakers [U]) used instead of pool + encoder."
    )


class EmbeddingAnonymizer(Anonymizer):
    """Base: subclasses implement `fit(pool)` and `transform(embeddings, voices)`."""

    works_on: ClassVar[tuple[str, ...]] = ("embedding",)
    _prepared: bool = False

    def prepare(self) -> None:
        if self._prepared:
            return
        self.fit(load_pool(self.context, self.params.pool_vectors, self.params.pool, self.params.encoder))
        self._prepared = True

    def fit(self, pool: PoolEmbeddings) -> None:
        raise NotImplementedError

    def transform(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        raise NotImplementedError

    def anonymize_embeddings(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        self.prepare()
        embeddings = np.asarray(embeddings, dtype=np.float64)
        if embeddings.ndim != 2 or len(embeddings) != len(voices):
            raise DataError(
                f"{self.name} needs embeddings [B, D] with one voice per row; got shape {embeddings.shape} "
                f"and {len(voices)} voices."
            )
        if embeddings.shape[1] != self.dim:
            raise DataError(
                f"{self.name} was fitted on {self.dim}-d pool vectors but got {embeddings.shape[1]}-d embeddings; "
                "use the same encoder for the pool and the data."
            )
        return self.transform(embeddings, voices)

    @property
    def dim(self) -> int:
        raise NotImplementedError
