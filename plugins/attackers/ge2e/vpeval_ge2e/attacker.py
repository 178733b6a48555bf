"""The "ge2e" attacker: the pretrained GE2E encoder, no training (the attacker without training data)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from vpeval.api import Attacker
from vpeval.content_cache import cached_map, identity_digest, source_digest
from vpeval.errors import DataError
from vpeval.types import TrainingData, Utterance
from vpeval_ge2e.encoder import Ge2eEncoder, Ge2eParams


class Ge2eAttacker(Attacker):
    """Pretrained GE2E d-vectors, cosine scoring; a side is the mean of its utterances' d-vectors."""

    name: ClassVar[str] = "ge2e"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = False
    Params: ClassVar[type[Ge2eParams]] = Ge2eParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.encoder = Ge2eEncoder(self.params, self.context)
        self._cache: dict[tuple[str, int | None], np.ndarray] = {}

    def train(self, data: TrainingData) -> None:
        """Nothing to learn: the model is pretrained."""

    def save(self, folder: Path) -> None:
        """Nothing to store: the weights come with resemblyzer."""

    def load(self, folder: Path) -> None:
        """Nothing to restore."""

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        """Mean d-vector per side [S, 256]; each distinct utterance (by path) is embedded once per run."""
        for side in sides:
            if len(side) == 0:
                raise DataError(
                    f"A trial side given to the {self.name} attacker has no utterances; check the trial list."
                )
        todo = list({_key(u): u for side in sides for u in side if _key(u) not in self._cache}.values())
        if todo:
            self.encoder.prepare()  # load once, before the workers fork
            vectors = cached_map(
                self.context,
                todo,
                self.extractor_identity(),
                lambda u: self.encoder.embed(u.load(self.sample_rate)),
                f"{self.name}: embed",
            )
            for u, vector in zip(todo, vectors):
                self._cache[_key(u)] = vector
        return np.stack([np.mean([self._cache[_key(u)] for u in side], axis=0) for side in sides]).astype(np.float64)

    def extractor_identity(self) -> str:
        """What a d-vector depends on besides the audio: resemblyzer's release, our code, the parameters."""
        from importlib.metadata import version

        from vpeval_ge2e import encoder, preprocess

        return "ge2e-" + identity_digest(
            version("resemblyzer"), source_digest(encoder, preprocess), self.params.model_dump_json()
        )


def _key(u: Utterance) -> tuple[str, int | None]:
    return (u.path, u.channel)
