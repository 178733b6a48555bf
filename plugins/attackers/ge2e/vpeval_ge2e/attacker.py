"""The "ge2e" attacker: the pretrained GE2E encoder, no training (the attacker without training data)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from vpeval.api import Attacker
from vpeval.content_cache import ContentCache, cached_map, identity_digest, source_digest
from vpeval.data.fingerprint import file_stamp
from vpeval.sides import remembered_side_means, require_utterances
from vpeval.types import TrainingData, Utterance
from vpeval.vector_table import VectorTable
from vpeval_ge2e.encoder import Ge2eEncoder, Ge2eParams


class Ge2eAttacker(Attacker):
    """Pretrained GE2E d-vectors, cosine scoring; a side is the mean of its utterances' d-vectors."""

    name: ClassVar[str] = "ge2e"
    sample_rate: ClassVar[int] = 16000
    needs_training: ClassVar[bool] = False
    pretrained_on: ClassVar[str] = "the GE2E weights resemblyzer 0.1.4 ships (the package does not name their data)"
    Params: ClassVar[type[Ge2eParams]] = Ge2eParams
    device_sensitive: ClassVar[bool] = True

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.encoder = Ge2eEncoder(self.params, self.context)
        self._cache = VectorTable()  # (path, channel) -> d-vector

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
        require_utterances(sides, self.name)
        return remembered_side_means(sides, self._cache, self._embed)

    def _embed(self, todo: list[Utterance]) -> list[np.ndarray]:
        """d-vectors of utterances not remembered yet: the content cache first, then the encoder."""
        self.encoder.prepare()  # load once, before the workers fork
        if self.context.on_gpu:  # batched in this process: CUDA does not survive a fork
            return self._embed_batched(todo)
        # the CPU: one utterance per call in the run's forked workers (measured faster there)
        return cached_map(
            self.context,
            todo,
            self.extractor_identity(),
            lambda u: self.encoder.embed(u.load(self.sample_rate)),
            f"{self.name}: embed",
        )

    def _embed_batched(self, utterances: list[Utterance]) -> list[np.ndarray]:
        """embed_batch over the utterances the content cache lacks, a few hundred partial windows at a time."""
        root = self.context.options.get("cache_root")
        cache = ContentCache(Path(root) / "content", self.extractor_identity()) if root else None
        out: list[np.ndarray | None] = [cache.get(u) if cache else None for u in utterances]
        missing = [i for i, v in enumerate(out) if v is None]
        group = max(1, self.params.batch_partials // 4)  # utterances per embed_batch call: a few partials each
        chunks = [missing[k : k + group] for k in range(0, len(missing), group)]
        for chunk in self.context.progress(chunks, total=len(chunks), description=f"{self.name}: embed (batched)"):
            stamps = [file_stamp(utterances[i].path) for i in chunk]
            vectors = self.encoder.embed_batch([utterances[i].load(self.sample_rate) for i in chunk])
            for i, stamp, vector in zip(chunk, stamps, vectors):
                out[i] = vector
                if cache is not None and file_stamp(utterances[i].path) == stamp:
                    cache.put(utterances[i], vector)
        return out  # type: ignore[return-value]

    def extractor_identity(self) -> str:
        """What a d-vector depends on besides the audio: resemblyzer's release, our code, the parameters."""
        from importlib.metadata import version

        from vpeval.device import numerics_identity
        from vpeval_ge2e import encoder, preprocess

        numerics = numerics_identity(self.context.device, self.context.precision)  # {} on the CPU in fp32
        return "ge2e-" + identity_digest(
            version("resemblyzer"),
            source_digest(encoder, preprocess),
            self.params.model_dump_json(exclude={"batch_partials"}),  # batching does not change a d-vector
            *([numerics] if numerics else []),
        )
