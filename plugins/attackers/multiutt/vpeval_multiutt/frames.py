"""The frozen frame frontend: log-mel filterbanks, or the `features` of any vpeval frontend plugin.

Frames are computed once per whole utterance and cropped at frame level, so an expensive frozen
frontend (a Whisper encoder) runs once per utterance, not once per training crop.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vpeval.api import Frontend, PluginContext
from vpeval.errors import ConfigError
from vpeval.types import Corpus, Utterance
from vpeval_multiutt.memory_cache import MemoryCache

SAMPLE_RATE = 16000
FBANK_RATE = 100.0


class FrameSource:
    """Utterance -> frames float32 [T, dim] at `frame_rate` frames per second."""

    frame_rate: float = FBANK_RATE

    def __init__(self, cache_mb: int):
        self.cache = MemoryCache(cache_mb)

    def frames(self, utterance: Utterance) -> np.ndarray:
        return self.cache.get((utterance.path, utterance.channel), lambda: self.compute(utterance.load(SAMPLE_RATE)))

    def compute(self, audio: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        raise NotImplementedError

    def fit(self, corpus: Corpus) -> None:
        """Frozen sources learn nothing; a frontend that fits (codebooks) fits here."""

    def save(self, folder: Path) -> None:
        pass

    def load(self, folder: Path) -> None:
        pass


class FbankFrames(FrameSource):
    """speechbrain Fbank (25 ms windows, 10 ms hop), the utterance mean subtracted (as the ASV recipes do)."""

    def __init__(self, n_mels: int, cache_mb: int):
        super().__init__(cache_mb)
        self.n_mels = n_mels
        self._fbank = None

    @property
    def dim(self) -> int:
        return self.n_mels

    def compute(self, audio: np.ndarray) -> np.ndarray:
        import torch

        if self._fbank is None:
            from vpeval_torch.fbank import FbankFeatures

            self._fbank = FbankFeatures(self.n_mels, SAMPLE_RATE)
        feats = self._fbank(torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))[None])[0]
        return feats.numpy().astype(np.float32)


class FrontendFrames(FrameSource):
    """The float features [T, D] that a vpeval frontend plugin returns, used frozen."""

    def __init__(self, frontend: Frontend, cache_mb: int):
        super().__init__(cache_mb)
        self.frontend = frontend
        self.frame_rate = float(frontend.frame_rate)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.compute(np.zeros(SAMPLE_RATE, dtype=np.float32)).shape[1])
        return self._dim

    def compute(self, audio: np.ndarray) -> np.ndarray:
        from vpeval.audio import resample

        if self.frontend.sample_rate != SAMPLE_RATE:
            audio = resample(audio, SAMPLE_RATE, self.frontend.sample_rate)
        out = self.frontend.encode(np.asarray(audio, dtype=np.float32))
        if out.features is None:
            raise ConfigError(
                f"multiutt parameter frame_source: the frontend {self.frontend.name} returns tokens only; "
                "the ECAPA-TDNN reads float frames, so name a frontend that returns features (for example kimi-like)."
            )
        return np.asarray(out.features, dtype=np.float32)

    def fit(self, corpus: Corpus) -> None:
        self.frontend.fit(corpus)

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.frontend.save(folder)

    def load(self, folder: Path) -> None:
        self.frontend.load(folder)


def make_frame_source(name: str, params: dict, n_mels: int, cache_mb: int, context: PluginContext) -> FrameSource:
    if name == "fbank":
        return FbankFrames(n_mels, cache_mb)
    frontend = context.get("frontend", name, params)
    return FrontendFrames(frontend, cache_mb)


def crop_start(frames: int, length: int, rng: np.random.Generator) -> int:
    """A random start for a `length`-frame crop (0 without a draw when the utterance is shorter)."""
    return int(rng.integers(0, frames - length + 1)) if frames >= length else 0


def crop_at(frames: np.ndarray, start: int, length: int) -> np.ndarray:
    """`length` frames from `start`; utterances too short are repeated to fill it."""
    if len(frames) == 0:
        return np.zeros((length, frames.shape[1]), dtype=np.float32)
    if len(frames) < start + length:
        frames = np.tile(frames, (-(-(start + length) // len(frames)), 1))
    return frames[start : start + length]


def random_crop(frames: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """A random stretch of `length` frames; shorter utterances are repeated to fill it."""
    return crop_at(frames, crop_start(len(frames), length, rng), length)
