"""The "ge2e" speaker encoder: resemblyzer's pretrained GE2E d-vector (Wan et al. 2018), 256-d."""

from __future__ import annotations

import warnings
from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Params, SpeakerEncoder
from vpeval.errors import MissingModelError


class Ge2eParams(Params):
    vad: bool = Field(
        True, description="Trim long silences with webrtcvad first, as resemblyzer's preprocess_wav does."
    )
    normalize_volume: bool = Field(True, description="Raise quiet input to -30 dBFS first, as resemblyzer does.")
    partial_rate: float = Field(
        1.3,
        ge=0.625,
        le=10.0,
        description="1.6 s partial windows per second of audio; the utterance vector averages them.",
    )
    min_coverage: float = Field(
        0.75, gt=0.0, le=1.0, description="Share of a last partial window that must be audio to keep it."
    )


def load_voice_encoder():
    """resemblyzer's VoiceEncoder on the CPU with its packaged weights (no download)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # webrtcvad imports the deprecated pkg_resources
            from resemblyzer import VoiceEncoder
    except ImportError as exc:
        raise MissingModelError(
            f"The ge2e encoder needs the resemblyzer package ({exc}); install it with pip install Resemblyzer==0.1.4."
        ) from exc
    # resemblyzer calls torch.load on its own file; torch >= 2.6 loads it with weights_only=True.
    return VoiceEncoder(device="cpu", verbose=False)


class Ge2eEncoder(SpeakerEncoder):
    """Pretrained GE2E d-vector (resemblyzer 0.1.4): 40 mel, 3-layer LSTM, 256-d, L2-normalised."""

    name: ClassVar[str] = "ge2e"
    sample_rate: ClassVar[int] = 16000
    dim: ClassVar[int] = 256
    Params: ClassVar[type[Ge2eParams]] = Ge2eParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._model = None

    def prepare(self) -> None:
        if self._model is None:
            self._model = load_voice_encoder()

    def embed(self, audio: np.ndarray) -> np.ndarray:
        from vpeval_ge2e.preprocess import preprocess

        self.prepare()
        self.context.apply_threads()
        wav = preprocess(audio, vad=self.params.vad, normalize=self.params.normalize_volume)
        embedding = self._model.embed_utterance(
            wav, rate=self.params.partial_rate, min_coverage=self.params.min_coverage
        )
        return np.asarray(embedding, dtype=np.float32)
