"""The "ge2e" speaker encoder: resemblyzer's pretrained GE2E d-vector (Wan et al. 2018), 256-d."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
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
    batch_partials: int = Field(
        256,
        ge=1,
        le=65536,
        description="Partial windows (1.6 s each) per LSTM forward in batched embedding (GPU runs, embed_batch).",
    )


def load_voice_encoder(device: str = "cpu"):
    """resemblyzer's VoiceEncoder with its packaged weights (no download), loaded on the CPU, then moved to `device`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # webrtcvad imports the deprecated pkg_resources
            from resemblyzer import VoiceEncoder
    except ImportError as exc:
        raise MissingModelError(
            f"The ge2e encoder needs the resemblyzer package ({exc}); install it with pip install Resemblyzer==0.1.4."
        ) from exc
    # resemblyzer calls torch.load on its own file (map_location cpu); torch >= 2.6 loads it with weights_only=True.
    model = VoiceEncoder(device="cpu", verbose=False)
    if device != "cpu":
        import torch

        model.to(device)
        model.device = torch.device(device)  # embed_utterance moves its input there
    return model.eval()


class Ge2eEncoder(SpeakerEncoder):
    """Pretrained GE2E d-vector (resemblyzer 0.1.4): 40 mel, 3-layer LSTM, 256-d, L2-normalised."""

    name: ClassVar[str] = "ge2e"
    sample_rate: ClassVar[int] = 16000
    dim: ClassVar[int] = 256
    Params: ClassVar[type[Ge2eParams]] = Ge2eParams
    device_sensitive: ClassVar[bool] = True

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._model = None

    def prepare(self) -> None:
        if self._model is None:
            self._model = load_voice_encoder(self.context.device)

    def _wav(self, audio: np.ndarray) -> np.ndarray:
        from vpeval_ge2e.preprocess import preprocess

        return preprocess(audio, vad=self.params.vad, normalize=self.params.normalize_volume)

    def embed(self, audio: np.ndarray) -> np.ndarray:
        """resemblyzer's embed_utterance of the preprocessed waveform (its partial windows in one forward)."""
        self.prepare()
        self.context.apply_threads()
        with self.context.autocast():
            embedding = self._model.embed_utterance(
                self._wav(audio), rate=self.params.partial_rate, min_coverage=self.params.min_coverage
            )
        return np.asarray(embedding, dtype=np.float32)

    def partial_mels(self, audio: np.ndarray) -> np.ndarray:
        """The utterance's partial mel windows [P, 160, 40], cut exactly as embed_utterance cuts them."""
        from resemblyzer import audio as resemblyzer_audio

        wav = self._wav(audio)
        wav_slices, mel_slices = self._model.compute_partial_slices(
            len(wav), self.params.partial_rate, self.params.min_coverage
        )
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)), "constant")
        mel = resemblyzer_audio.wav_to_mel_spectrogram(wav)
        return np.stack([mel[s] for s in mel_slices]).astype(np.float32)

    def embed_batch(self, audios: Sequence[np.ndarray]) -> np.ndarray:
        """[B, 256]: every utterance's partial windows (all 160 frames long, so no padding and no mask) go
        through the LSTM together, `batch_partials` at a time, on the run's device; each utterance's
        d-vector is then the L2-normalised mean of its own partials, as in `embed`. Equal to `embed` of
        each up to float rounding of the batch size (tests: max abs difference below 1e-5 on the CPU)."""
        import torch

        self.prepare()
        self.context.apply_threads()
        if len(audios) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        mels = [self.partial_mels(a) for a in audios]
        counts = [len(m) for m in mels]
        flat = np.concatenate(mels)
        step = self.params.batch_partials
        out = []
        with torch.no_grad(), self.context.autocast():
            for start in range(0, len(flat), step):
                chunk = torch.from_numpy(flat[start : start + step]).to(self.context.device)
                out.append(self._model(chunk).float().cpu().numpy())
        partials = np.concatenate(out)
        vectors = []
        for piece in np.split(partials, np.cumsum(counts)[:-1]):
            raw = piece.mean(axis=0)
            vectors.append(raw / np.linalg.norm(raw, 2))
        return np.stack(vectors).astype(np.float32)
