"""Speaker encoders "ecapa" and "xvector": a trained attacker's network, for anonymizers and metrics."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Params, SpeakerEncoder
from vpeval.errors import MissingModelError


class CheckpointParams(Params):
    checkpoint: str | None = Field(
        None, description="Folder a trained ecapa/xvector attacker saved (embedding_model.pt + config.json)."
    )
    embed_max_seconds: float | None = Field(
        None, gt=0.0, description="Embed at most this many seconds of each input; null embeds all."
    )


class CheckpointEncoder(SpeakerEncoder):
    """Loads the network lazily on first use; embeddings are raw (not length-normalised).

    `dim` is the class default until the checkpoint is loaded, then the checkpoint's embedding size.
    """

    architecture: ClassVar[str] = ""
    sample_rate: ClassVar[int] = 16000
    Params: ClassVar[type[CheckpointParams]] = CheckpointParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._embedder = None

    def prepare(self) -> None:
        from vpeval_asv.checkpoint import load_weights
        from vpeval_asv.embedding import Embedder

        if not self.params.checkpoint:
            raise MissingModelError(
                f"The {self.name} encoder needs a trained model: set its parameter checkpoint to the folder "
                f"a trained {self.name} attacker saved."
            )
        config, model = load_weights(self.params.checkpoint, f"{self.name}.checkpoint")
        if config.architecture != self.architecture:
            raise MissingModelError(
                f"{self.name}.checkpoint {self.params.checkpoint} holds a {config.architecture} model, not {self.architecture}; "
                f"use the {config.architecture} encoder or another checkpoint."
            )
        self._embedder = Embedder(config, model, self.params.embed_max_seconds)
        self.dim = config.embedding_dim  # the checkpoint's size, which Params may have scaled down

    def embed(self, audio: np.ndarray) -> np.ndarray:
        if self._embedder is None:
            self.prepare()
        self.context.apply_threads()
        return self._embedder.embed_audio(audio)


class EcapaEncoder(CheckpointEncoder):
    """ECAPA-TDNN embeddings (192-d by default) from a checkpoint the ecapa attacker trained."""

    name: ClassVar[str] = "ecapa"
    architecture: ClassVar[str] = "ecapa"
    dim: ClassVar[int] = 192


class XvectorEncoder(CheckpointEncoder):
    """x-vector embeddings (512-d by default) from a checkpoint the xvector attacker trained."""

    name: ClassVar[str] = "xvector"
    architecture: ClassVar[str] = "xvector"
    dim: ClassVar[int] = 512
