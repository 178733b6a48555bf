"""Embedding extraction with a trained network, one utterance at a time, cached by utterance path."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch

from vpeval.api import PluginContext
from vpeval.content_cache import cached_map, identity_digest, source_digest
from vpeval.types import Utterance
from vpeval_asv.models import ModelConfig, build_embedding_model
from vpeval_torch.fbank import FbankFeatures


class Embedder:
    """A network and its features in eval mode.

    Utterances are embedded one by one, unpadded: an utterance's embedding then never depends on what
    else is in a batch, so the per-path cache gives the same numbers whatever order a run asks in.
    """

    def __init__(self, config: ModelConfig, model: torch.nn.Module | None = None, max_seconds: float | None = None):
        self.config = config
        self.features = FbankFeatures(config.n_mels, config.sample_rate)
        self.model = model if model is not None else build_embedding_model(config)
        self.max_samples = None if max_seconds is None else int(max_seconds * config.sample_rate)
        self.cache: dict[tuple[str, int | None], np.ndarray] = {}

    def embed_audio(self, audio: np.ndarray) -> np.ndarray:
        """Raw embedding [D] of mono float32 audio at the model's sample rate."""
        audio = np.asarray(audio, dtype=np.float32)
        if self.max_samples is not None:
            audio = audio[: self.max_samples]
        if audio.size < 400:  # shorter than one 25 ms window: pad so the network sees a few frames
            audio = np.pad(audio, (0, 400 - audio.size))
        was_training = self.model.training
        self.model.eval()
        # speechbrain's x-vector statistics pooling adds tiny noise from torch's global generator even
        # in eval mode: a fixed seed per call keeps an utterance's embedding independent of call order.
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            feats = self.features(torch.from_numpy(audio).unsqueeze(0))
            out = self.model(feats).reshape(-1)
        self.model.train(was_training)
        return out.numpy().astype(np.float32)

    def embed_utterances(
        self,
        utterances: Sequence[Utterance],
        progress: Callable[[Iterable, int, str], Iterable] | None = None,
        description: str = "embed",
        context: PluginContext | None = None,
    ) -> np.ndarray:
        """Raw embeddings [U, D]; each distinct path is read and embedded once per Embedder.

        With a plugin context, missing ones come from the run's content cache or are computed with the
        run's workers (forked: they share this model), one torch thread each.
        """
        todo = list({_key(u): u for u in utterances if _key(u) not in self.cache}.values())
        if context is not None and todo:
            threads = max(1, context.threads)

            def embed(u: Utterance) -> np.ndarray:
                torch.set_num_threads(threads)  # a forked worker inherits the trainer's thread count
                return self.embed_audio(u.load(self.config.sample_rate))

            vectors = cached_map(context, todo, self.identity(), embed, description)
            self.cache.update((_key(u), v) for u, v in zip(todo, vectors))
            todo = []
        items = progress(todo, len(todo), description) if (progress and todo) else todo
        for u in items:
            self.cache[_key(u)] = self.embed_audio(u.load(self.config.sample_rate))
        if not utterances:
            return np.zeros((0, self.config.embedding_dim), dtype=np.float32)
        return np.stack([self.cache[_key(u)] for u in utterances])

    def forget(self) -> None:
        """Drop remembered embeddings (the weights changed)."""
        self.cache.clear()
        self._identity = None

    def identity(self) -> str:
        """What an embedding depends on besides the audio: weights, configuration, code, torch release."""
        if getattr(self, "_identity", None) is None:
            from vpeval_asv import models, padding
            from vpeval_torch import fbank

            state = [t.detach().cpu().numpy() for t in self.model.state_dict().values()]
            self._identity = "asv-" + identity_digest(
                torch.__version__,
                source_digest(fbank, models, padding, _this_module()),
                self.config,
                self.max_samples,
                *state,
            )
        return self._identity


def _this_module():
    import sys

    return sys.modules[__name__]


def _key(u: Utterance) -> tuple[str, int | None]:
    return (u.path, u.channel)


def length_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
