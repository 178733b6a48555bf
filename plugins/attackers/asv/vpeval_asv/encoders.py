"""Speaker encoders "ecapa" and "xvector": a trained attacker's network, for anonymizers and metrics.

The network comes from a folder a trained attacker saved (`checkpoint`) or is trained here, once, on a
named corpus (`train_corpus`): an in-platform encoder that experiments can build from a clean clone.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Params, PluginRef, SpeakerEncoder, stable_int
from vpeval.errors import MissingModelError


class CheckpointParams(Params):
    checkpoint: str | None = Field(
        None, description="Folder a trained ecapa/xvector attacker saved (embedding_model.pt + config.json)."
    )
    train_corpus: Annotated[dict[str, Any] | None, PluginRef("corpus")] = Field(
        None,
        description="Without a checkpoint: {use, params} of a corpus to train the same-named attacker on "
        "(every speaker; its validation share held out), once; the model is cached in the encoder's work folder.",
    )
    train_params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of that attacker (architecture, epochs, ...)."
    )
    embed_max_seconds: float | None = Field(
        None, ge=0.2, le=3600.0, description="Embed at most this many seconds of each input; null embeds all."
    )
    embed_batch_size: int = Field(
        64, ge=1, le=65_536, description="Most waveforms embedded together in one packed batch (embed_batch)."
    )
    embed_batch_frames: int | None = Field(
        None,
        ge=100,
        le=100_000_000,
        description="Most feature frames (10 ms each) in one batch; null: 8000 on a CPU, 200000 on a GPU.",
    )


class CheckpointEncoder(SpeakerEncoder):
    """Loads the network lazily on first use; embeddings are raw (not length-normalised).

    `dim` is the class default until the checkpoint is loaded, then the checkpoint's embedding size.
    """

    architecture: ClassVar[str] = ""
    sample_rate: ClassVar[int] = 16000
    device_sensitive: ClassVar[bool] = True
    Params: ClassVar[type[CheckpointParams]] = CheckpointParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._embedder = None

    def prepare(self) -> None:
        from vpeval_asv.checkpoint import load_weights
        from vpeval_asv.embedding import Embedder

        checkpoint = self.params.checkpoint
        if not checkpoint and self.params.train_corpus:
            checkpoint = str(self.trained_here())
        if not checkpoint:
            raise MissingModelError(
                f"The {self.name} encoder needs a trained model: set its parameter checkpoint to the folder "
                f"a trained {self.name} attacker saved, or train_corpus to a corpus to train one on."
            )
        config, model = load_weights(checkpoint, f"{self.name}.checkpoint")
        if config.architecture != self.architecture:
            raise MissingModelError(
                f"{self.name}.checkpoint {self.params.checkpoint} holds a {config.architecture} model, "
                f"not {self.architecture}; "
                f"use the {config.architecture} encoder or another checkpoint."
            )
        p = self.params
        self._embedder = Embedder(
            config,
            model,
            p.embed_max_seconds,
            device=self.context.device,
            batch_size=p.embed_batch_size,
            batch_frames=p.embed_batch_frames,
            autocast=self.context.autocast,
        )
        self.dim = config.embedding_dim  # the checkpoint's size, which Params may have scaled down

    def trained_here(self) -> Path:
        """Train the attacker of this name on train_corpus (or reuse the model trained before)."""
        from vpeval.types import TrainingData, TrainingStage

        spec = dict(self.params.train_corpus)
        if "use" not in spec:
            raise MissingModelError(f"{self.name}.train_corpus needs `use: <corpus plugin>`, got {spec}.")
        corpus = self.context.get("corpus", spec["use"], dict(spec.get("params") or {})).load()
        identity = json.dumps(
            [self.name, corpus.fingerprint or corpus.name, self.params.train_params, self.context.seed],
            sort_keys=True,
            default=str,
        )
        folder = self.context.folder("trained") / f"{stable_int(identity):016x}"
        if (folder / "embedding_model.pt").is_file():
            return folder
        self.context.log.info("%s encoder: training on %s (%d utterances)", self.name, corpus.name, len(corpus))
        attacker = self.context.get("attacker", self.name, dict(self.params.train_params))
        attacker.train(TrainingData(stages=[TrainingStage("train", corpus)]))
        partial = folder.with_name(folder.name + f".{os.getpid()}.tmp")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        attacker.save(partial)
        try:
            os.replace(partial, folder)  # atomic: an interrupted run leaves no half model
        except OSError:  # another process (a forked worker) finished the same model first
            if not (folder / "embedding_model.pt").is_file():
                raise
            shutil.rmtree(partial, ignore_errors=True)
        return folder

    def embed(self, audio: np.ndarray) -> np.ndarray:
        if self._embedder is None:
            self.prepare()
        self.context.apply_threads()
        return self._embedder.embed_audio(audio)

    def embed_batch(self, audios) -> np.ndarray:
        """Embeddings [B, D] in packed length buckets, equal to `embed` of each up to float rounding."""
        if self._embedder is None:
            self.prepare()
        self.context.apply_threads()
        return self._embedder.embed_many(list(audios))


class EcapaEncoder(CheckpointEncoder):
    """ECAPA-TDNN embeddings (192-d by default) from a checkpoint the ecapa attacker trained."""

    name: ClassVar[str] = "ecapa"
    architecture: ClassVar[str] = "ecapa"
    dim: ClassVar[int] = 192

    class Params(CheckpointParams):
        train_params: Annotated[dict[str, Any], PluginRef("attacker", name="ecapa")] = Field(
            default_factory=dict, description="Parameters of the ecapa attacker trained on train_corpus."
        )


class XvectorEncoder(CheckpointEncoder):
    """x-vector embeddings (512-d by default) from a checkpoint the xvector attacker trained."""

    name: ClassVar[str] = "xvector"
    architecture: ClassVar[str] = "xvector"
    dim: ClassVar[int] = 512

    class Params(CheckpointParams):
        train_params: Annotated[dict[str, Any], PluginRef("attacker", name="xvector")] = Field(
            default_factory=dict, description="Parameters of the xvector attacker trained on train_corpus."
        )
