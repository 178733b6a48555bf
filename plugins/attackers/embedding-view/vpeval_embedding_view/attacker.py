"""An attacker that is another attacker (reached through the core) and also shows its embeddings.

It trains, represents and scores exactly as the viewed attacker does, so its verification rows are that
attacker's. In addition it answers `inversion_embeddings`: the viewed attacker's representation of each
single utterance of the observed speech (original or anonymized) and of the same utterance's original
speech. That is the input kind ("embeddings") the core gives to metrics such as `attribute-inference`, which
otherwise only attackers that recover embeddings feed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from vpeval.api import Attacker, Params, PluginRef
from vpeval.errors import ConfigError
from vpeval.types import Corpus, TrainingData, Utterance


class EmbeddingViewParams(Params):
    use: Annotated[str, PluginRef("attacker", params="params")] = Field(description="The attacker to view.")
    params: dict[str, Any] = Field(default_factory=dict, description="Its parameters.")


class EmbeddingView(Attacker):
    """The viewed attacker, unchanged, plus its per-utterance embeddings for the embedding metrics."""

    name = "embedding-view"
    Params = EmbeddingViewParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._viewed: Attacker | None = None
        # single-utterance vectors by (id, path) since the model was trained or loaded: the original evaluation
        # speech is observed once for protocol O and again as every anonymizer's reference
        self._vectors: dict[tuple[str, str], np.ndarray] = {}

    @property
    def viewed(self) -> Attacker:
        if self._viewed is None:
            if self.params.use == self.name:
                raise ConfigError("embedding-view views another attacker; name that attacker in `use`.")
            attacker = self.context.get("attacker", self.params.use, dict(self.params.params))
            if attacker.uses_frontend:
                raise ConfigError(
                    f"embedding-view cannot give attacker {self.params.use} the frontend it needs; "
                    "view an attacker without a frontend."
                )
            self._viewed = attacker
        return self._viewed

    def train(self, data: TrainingData) -> None:
        self._vectors.clear()
        if self.viewed.needs_training:
            self.viewed.train(data)

    def save(self, folder: Path) -> None:
        self.viewed.save(folder)

    def load(self, folder: Path) -> None:
        self._vectors.clear()
        self.viewed.load(folder)

    def training_curve(self) -> list[dict[str, Any]]:
        return self.viewed.training_curve()

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.viewed.represent(utterances)

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        return self.viewed.represent_many(sides)

    def score(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        return self.viewed.score(enroll, test)

    def inversion_embeddings(
        self, corpus: Corpus, reference: Corpus | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        reference = corpus if reference is None else reference
        observed = self._single([*corpus])
        original = observed if reference is corpus else self._single([reference[u.id] for u in corpus])
        return observed, original, np.array([u.speaker for u in corpus])

    def _single(self, utterances: list[Utterance]) -> np.ndarray:
        """The viewed attacker's vector of each utterance alone, each computed once per model."""
        missing = list({(u.id, u.path): u for u in utterances if (u.id, u.path) not in self._vectors}.values())
        if missing:
            vectors = np.asarray(self.viewed.represent_many([[u] for u in missing]), dtype=np.float64)
            self._vectors.update({(u.id, u.path): v for u, v in zip(missing, vectors, strict=True)})
        return np.stack([self._vectors[(u.id, u.path)] for u in utterances])
