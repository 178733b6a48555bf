"""Audio to network inputs to embeddings: the Fbank stream, the frozen SSL stream and the trainable network."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from vpeval.types import Utterance
from vpeval_dast.model import DastNetwork, SpecAugment
from vpeval_dast.ssl import FrozenSsl
from vpeval_torch.fbank import FbankFeatures

SAMPLE_RATE = 16000


class Embedder:
    def __init__(
        self,
        network: DastNetwork,
        ssl: FrozenSsl | None,
        specaugment: SpecAugment,
        embed_max_seconds: float | None = None,
        ssl_cache: SslCache | None = None,
    ):
        self.network = network
        self.ssl = ssl
        self.ssl_cache = ssl_cache if ssl is not None else None  # ssl_context: utterance
        self.specaugment = specaugment
        self.fbank = FbankFeatures(network.config.n_mels) if network.config.fusion != "ssl" else None
        self.max_samples = None if embed_max_seconds is None else int(embed_max_seconds * SAMPLE_RATE)

    def inputs(self, waves: torch.Tensor, generator: torch.Generator | None = None, hidden: torch.Tensor | None = None):
        """(Fbank frames or None, SSL hidden states or None); SpecAugment on the Fbank when a generator is given.
        `hidden`: the SSL hidden states of these waves, already computed (ssl_context: utterance)."""
        fbank = self.fbank(waves) if self.fbank is not None else None
        if fbank is not None and generator is not None:
            fbank = self.specaugment(fbank, generator)
        if self.ssl is not None and hidden is None:
            hidden = self.ssl.hidden_states(waves)
        return fbank, (hidden if self.ssl is not None else None)

    def embed_audio(self, audio: np.ndarray, utterance: Utterance | None = None) -> np.ndarray:
        """The embedding of one whole utterance; given the utterance, its SSL states come from ssl_cache."""
        audio = np.asarray(audio, dtype=np.float32)[: self.max_samples]
        if audio.size < SAMPLE_RATE // 10:  # shorter than the convolutions' reach: repeat it
            audio = np.tile(
                audio if audio.size else np.zeros(1, np.float32), -(-(SAMPLE_RATE // 10) // max(1, audio.size))
            )
        hidden = None
        if self.ssl_cache is not None and utterance is not None and self.max_samples is None:
            hidden = torch.from_numpy(self.ssl_cache.load(utterance, audio)[:, None]).float()
        self.network.eval()
        with torch.no_grad():
            return (
                self.network(*self.inputs(torch.from_numpy(audio)[None], hidden=hidden))[0].numpy().astype(np.float64)
            )

    def embed_utterances(self, utterances: Sequence[Utterance], context=None, description: str = "") -> np.ndarray:
        """Embeddings [U, E], each distinct utterance embedded once."""
        unique = list(dict.fromkeys((u.path, u.channel) for u in utterances))
        items = context.progress(unique, total=len(unique), description=description) if context else unique
        by_key = {}
        lookup = {(u.path, u.channel): u for u in utterances}
        for key in items:
            by_key[key] = self.embed_audio(lookup[key].load(SAMPLE_RATE), lookup[key])
        return np.stack([by_key[(u.path, u.channel)] for u in utterances])


class _Lru:
    """Arrays kept in memory up to a byte budget, least recently used out."""

    def __init__(self, budget_mb: int):
        self.budget = budget_mb * 1024 * 1024
        self.used = 0
        self.items: OrderedDict[tuple[str, int | None], np.ndarray] = OrderedDict()

    def _get(self, key, make):
        if key in self.items:
            self.items.move_to_end(key)
            return self.items[key]
        value = make()
        if value.nbytes <= self.budget:
            self.items[key] = value
            self.used += value.nbytes
            while self.used > self.budget:
                self.used -= self.items.popitem(last=False)[1].nbytes
        return value


class AudioCache(_Lru):
    """Mono float32 16 kHz audio kept in memory up to a byte budget (least recently used out)."""

    def load(self, utterance: Utterance) -> np.ndarray:
        return self._get(
            (utterance.path, utterance.channel), lambda: np.asarray(utterance.load(SAMPLE_RATE), dtype=np.float32)
        )


class SslCache(_Lru):
    """The frozen SSL model's hidden states of whole utterances [L, T, D] (float16), computed once per
    process instead of once per training crop and epoch, and shared by every dast attacker of a run that
    uses the same SSL model (ssl_context: utterance): they train and embed on the same files. A file is
    known by path, channel, size and modification time, so a rewritten file is computed again."""

    def __init__(self, budget_mb: int, ssl: FrozenSsl):
        super().__init__(budget_mb)
        self.ssl = ssl

    def load(self, utterance: Utterance, audio: np.ndarray) -> np.ndarray:
        def compute() -> np.ndarray:
            with torch.no_grad():
                return self.ssl.hidden_states(torch.from_numpy(audio)[None])[:, 0].numpy().astype(np.float16)

        try:
            stat = Path(utterance.path).stat()
            version = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            version = None
        return self._get((utterance.path, utterance.channel, version, audio.size), compute)


_SHARED_SSL_CACHES: dict[str, SslCache] = {}


def shared_ssl_cache(ssl_key: str, ssl: FrozenSsl, budget_mb: int) -> SslCache:
    """The process's hidden-state cache of one SSL model (the largest budget asked for wins)."""
    cache = _SHARED_SSL_CACHES.get(ssl_key)
    if cache is None or cache.ssl is not ssl:
        cache = _SHARED_SSL_CACHES[ssl_key] = SslCache(budget_mb, ssl)
    cache.budget = max(cache.budget, budget_mb * 1024 * 1024)
    return cache


def random_crop(audio: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """A random stretch of `length` samples; shorter audio is repeated to fill it."""
    if audio.size == 0:
        return np.zeros(length, dtype=np.float32)
    if audio.size < length:
        return np.tile(audio, -(-length // audio.size))[:length]
    start = int(rng.integers(0, audio.size - length + 1))
    return audio[start : start + length]


def random_crop_with_frames(
    audio: np.ndarray, hidden: np.ndarray, length: int, hop: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random stretch of `length` samples and the SSL frames [L, length // hop, D] of the same stretch
    (hidden holds the whole utterance's frames, one per `hop` samples); shorter audio is repeated to fill
    it, its frames likewise. One draw from rng, as random_crop makes."""
    frames = max(1, length // hop)
    if audio.size == 0:
        return np.zeros(length, dtype=np.float32), np.zeros((hidden.shape[0], frames, hidden.shape[2]), hidden.dtype)
    if audio.size < length:
        reps = -(-length // audio.size)
        return np.tile(audio, reps)[:length], _frames(np.tile(hidden, (1, reps, 1)), 0, frames)
    first = int(rng.integers(0, audio.size - length + 1)) // hop
    start = first * hop  # the wave crop starts where its first frame does
    return audio[start : start + length], _frames(hidden, first, frames)


def _frames(hidden: np.ndarray, first: int, count: int) -> np.ndarray:
    """hidden[:, first:first + count], the last frame repeated where the utterance's frames run out."""
    out = hidden[:, first : first + count]
    if out.shape[1] < count:
        tail = np.repeat(hidden[:, -1:], count - out.shape[1], axis=1)
        out = np.concatenate([out, tail], axis=1)
    return out


def length_normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
