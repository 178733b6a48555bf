"""Audio to network inputs to embeddings: the Fbank stream, the frozen SSL stream and the trainable network."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import torch

from vpeval.types import Utterance

from vpeval_dast.model import DastNetwork, FbankFeatures, SpecAugment
from vpeval_dast.ssl import FrozenSsl

SAMPLE_RATE = 16000


class Embedder:
    def __init__(self, network: DastNetwork, ssl: FrozenSsl | None, specaugment: SpecAugment,
                 embed_max_seconds: float | None = None):
        self.network = network
        self.ssl = ssl
        self.specaugment = specaugment
        self.fbank = FbankFeatures(network.config.n_mels) if network.config.fusion != "ssl" else None
        self.max_samples = None if embed_max_seconds is None else int(embed_max_seconds * SAMPLE_RATE)

    def inputs(self, waves: torch.Tensor, generator: torch.Generator | None = None):
        """(Fbank frames or None, SSL hidden states or None); SpecAugment on the Fbank when a generator is given."""
        fbank = self.fbank(waves) if self.fbank is not None else None
        if fbank is not None and generator is not None:
            fbank = self.specaugment(fbank, generator)
        hidden = self.ssl.hidden_states(waves) if self.ssl is not None else None
        return fbank, hidden

    def embed_audio(self, audio: np.ndarray) -> np.ndarray:
        audio = np.asarray(audio, dtype=np.float32)[: self.max_samples]
        if audio.size < SAMPLE_RATE // 10:  # shorter than the convolutions' reach: repeat it
            audio = np.tile(audio if audio.size else np.zeros(1, np.float32), -(-(SAMPLE_RATE // 10) // max(1, audio.size)))
        self.network.eval()
        with torch.no_grad():
            return self.network(*self.inputs(torch.from_numpy(audio)[None]))[0].numpy().astype(np.float64)

    def embed_utterances(self, utterances: Sequence[Utterance], context=None, description: str = "") -> np.ndarray:
        """Embeddings [U, E], each distinct utterance embedded once."""
        unique = list(dict.fromkeys((u.path, u.channel) for u in utterances))
        items = context.progress(unique, total=len(unique), description=description) if context else unique
        by_key = {}
        lookup = {(u.path, u.channel): u for u in utterances}
        for key in items:
            by_key[key] = self.embed_audio(lookup[key].load(SAMPLE_RATE))
        return np.stack([by_key[(u.path, u.channel)] for u in utterances])


class AudioCache:
    """Mono float32 16 kHz audio kept in memory up to a byte budget (least recently used out)."""

    def __init__(self, budget_mb: int):
        self.budget = budget_mb * 1024 * 1024
        self.used = 0
        self.items: OrderedDict[tuple[str, int | None], np.ndarray] = OrderedDict()

    def load(self, utterance: Utterance) -> np.ndarray:
        key = (utterance.path, utterance.channel)
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        audio = np.asarray(utterance.load(SAMPLE_RATE), dtype=np.float32)
        if audio.nbytes <= self.budget:
            self.items[key] = audio
            self.used += audio.nbytes
            while self.used > self.budget:
                self.used -= self.items.popitem(last=False)[1].nbytes
        return audio


def random_crop(audio: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """A random stretch of `length` samples; shorter audio is repeated to fill it."""
    if audio.size == 0:
        return np.zeros(length, dtype=np.float32)
    if audio.size < length:
        return np.tile(audio, -(-length // audio.size))[:length]
    start = int(rng.integers(0, audio.size - length + 1))
    return audio[start : start + length]


def length_normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
