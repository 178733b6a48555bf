"""vtln: voice transformation by vocal tract length normalisation (frequency warping).

A pseudo-voice is one warping function, drawn per voice from voice.rng: a bilinear (all-pass) warp
with factor alpha, or a piecewise-linear one with slope `factor`, moving the spectrum up (shorter vocal
tract) or down (longer). `target: spectrum` warps the whole short-time spectrum, harmonics included
(F0 moves with the formants; phase by a phase vocoder); `target: envelope` moves only the cepstral
envelope and keeps the source's phase, harmonics and F0 (transform.py). Timing is always kept.

Sundermann and Ney, "VTLN-based voice conversion", ISSPIT 2003; Qian et al., "Towards privacy-preserving
speech data publishing" (VoiceMask, INFOCOM 2018) anonymize with this bilinear warp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval_vtln.transform import vtln
from vpeval_vtln.warping import bilinear, piecewise_linear, piecewise_linear_inverse

MAX_ALPHA = 0.4  # bilinear alpha 0.4 moves 1 kHz (at 16 kHz) to about 2.2 kHz: far beyond any speaker
MAX_FACTOR = 1.6

Alpha = Annotated[float, Field(ge=0.0, le=MAX_ALPHA)]
Factor = Annotated[float, Field(ge=1.0, le=MAX_FACTOR)]


@dataclass(frozen=True)
class Warp:
    """One pseudo-voice: a warping function by kind and signed strength."""

    kind: str
    value: float  # bilinear: alpha (> 0 up); piecewise-linear: slope (> 1 up)
    corner: float = 0.8

    def forward(self, w: np.ndarray) -> np.ndarray:
        if self.kind == "bilinear":
            return bilinear(w, self.value)
        return piecewise_linear(w, self.value, self.corner)

    def source_frequencies(self, grid: np.ndarray) -> np.ndarray:
        if self.kind == "bilinear":
            return bilinear(grid, -self.value)  # the bilinear warp's exact inverse
        return piecewise_linear_inverse(grid, self.value, self.corner)


class VTLN(Anonymizer):
    """VTLN voice transformation: the spectral envelope frequency-warped by a per-voice warping factor."""

    name: ClassVar[str] = "vtln"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """The warping family, the ranges its strength is drawn from, and STFT settings."""

        warping: Literal["bilinear", "piecewise-linear"] = Field(
            "bilinear", description="Warping function: all-pass bilinear (alpha) or piecewise-linear (slope, corner)."
        )
        alpha: tuple[Alpha, Alpha] = Field(
            (0.06, 0.14),
            description=f"Size of the bilinear warping factor, uniform in [low, high] per voice (0 to {MAX_ALPHA}); "
            "the sign comes from `direction`. 0.1 moves low formants by about 22 %.",
        )
        factor: tuple[Factor, Factor] = Field(
            (1.08, 1.2),
            description=f"Size of the piecewise-linear slope, log-uniform in [low, high] per voice "
            f"(1.0 to {MAX_FACTOR}); moving down divides by it.",
        )
        target: Literal["spectrum", "envelope"] = Field(
            "spectrum",
            description="What is warped: the whole short-time spectrum (formants and F0 move together, "
            "VoiceMask-style) or only the spectral envelope (F0 and harmonics kept, Sundermann-style).",
        )
        corner: float = Field(
            0.8,
            ge=0.3,
            le=0.95,
            description="Piecewise-linear corner as a share of the Nyquist frequency (divided by the slope when "
            "it is above 1); above it the warp runs straight to the band edge.",
        )
        direction: Literal["random", "up", "down"] = Field(
            "random",
            description="Envelope up (shorter tract) or down (longer), drawn per voice with even odds, or fixed.",
        )
        win_ms: float = Field(
            40.0, ge=10.0, le=100.0, description="STFT window (Hann) in ms; long enough to resolve harmonics."
        )
        hop_ms: float = Field(10.0, ge=1.0, le=50.0, description="STFT hop in ms, at most half the window.")
        lifter_ms: float = Field(
            1.8,
            ge=0.5,
            le=5.0,
            description="Cepstral lifter of the envelope in ms of quefrency; below the shortest pitch period "
            "(1.8 ms: F0 up to about 550 Hz).",
        )
        normalize: bool = Field(True, description="Scale the output to the input's peak amplitude.")

        @field_validator("alpha", "factor")
        @classmethod
        def _ordered(cls, value, info):
            if value[0] > value[1]:
                raise ValueError(
                    f"{info.field_name} must be [low, high] with low <= high, got {list(value)}; swap them"
                )
            return value

        @field_validator("hop_ms")
        @classmethod
        def _hop_within_window(cls, value, info):
            win = info.data.get("win_ms")
            if win is not None and value > win / 2:
                raise ValueError(f"hop_ms ({value}) must be at most half of win_ms ({win}) for overlap-add")
            return value

    def pseudo_voice(self, voice: Voice) -> Warp:
        """The voice's warp; always two draws from voice.rng, in a fixed order."""
        p, rng = self.params, voice.rng
        sign = 1.0 if rng.random() < 0.5 else -1.0
        unit = float(rng.random())
        if p.direction != "random":
            sign = 1.0 if p.direction == "up" else -1.0
        if p.warping == "bilinear":
            return Warp("bilinear", sign * (p.alpha[0] + unit * (p.alpha[1] - p.alpha[0])))
        log_factor = np.log(p.factor[0]) + unit * (np.log(p.factor[1]) - np.log(p.factor[0]))
        return Warp("piecewise-linear", float(np.exp(sign * log_factor)), p.corner)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        warp = self.pseudo_voice(voice)
        audio = np.asarray(audio, dtype=np.float32)
        p = self.params
        out = vtln(audio, sample_rate, warp.forward, warp.source_frequencies, p.target, p.win_ms, p.hop_ms, p.lifter_ms)
        if p.normalize:
            peak = float(np.max(np.abs(out)))
            if peak > 0:
                out *= float(np.max(np.abs(audio))) / peak
        return np.nan_to_num(out).astype(np.float32)
