"""Embedding extraction with a trained network, one utterance at a time, cached by utterance path."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import torch

from vpeval.types import Utterance

from vpeval_asv.features import Features
from vpeval_asv.models import ModelConfig, build_embedding_model


class Embedder:
    """A network and its features in eval mode.

    Utterances are embedded one by one, unpadded: an utterance's embedding then never depends on what
    else is in a batch, so the per-path cache gives the same numbers whatever order a run asks in.
    """

    def __init__(self, config: ModelConfig, model: torch.nn.Module | None = None, max_seconds: float | None = None):
        self.config = config
        self.features = Features(config.n_mels, config.sample_rate)
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
    ) -> np.ndarray:
        """Raw embeddings [U, D]; each distinct path is read and embedded once per Embedder."""
        todo = list({_key(u): u for u in utterances if _key(u) not in self.cache}.values())
        items = progress(todo, len(todo), description) if (progress and todo) else todo
        for u in items:
            self.cache[_key(u)] = self.embed_audio(u.load(self.config.sample_rate))
        if not utterances:
            return np.zeros((0, self.config.embedding_dim), dtype=np.float32)
        return np.stack([self.cache[_key(u)] for u in utterances])

    def forget(self) -> None:
        self.cache.clear()


def _key(u: Utterance) -> tuple[str, int | None]:
    return (u.path, u.channel)


def length_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
