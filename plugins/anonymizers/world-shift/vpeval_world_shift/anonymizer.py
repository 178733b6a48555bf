"""world-shift: a pseudo-voice made by shifting F0 and formants with the WORLD vocoder.

1. draw the pseudo-voice from the voice's rng: a direction (up or down), an F0 shift in semitones and
   a formant (vocal-tract-length) ratio, both inside the configured ranges;
2. WORLD analysis of the source: F0, spectral envelope, aperiodicity;
3. F0 times 2 ** (semitones / 12); envelope and aperiodicity warped along frequency,
   out(f) = in(f / ratio), which moves every formant by the ratio;
4. WORLD synthesis at the input rate, the input's length, scaled to the input's peak.

The signal-processing family of voice modification for anonymization: pitch and vocal-tract-length
(formant) changes, as cascaded in Kai et al. (SLT 2021) and used as the VoicePrivacy-style
signal-processing baselines next to McAdams (Patino et al., Interspeech 2021).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Anonymizer, Params, Voice
from vpeval_world.vocoder import WorldFeatures, analyse, synthesize, warp_frequency_axis

MIN_SECONDS = 0.1  # WORLD needs a few frames; shorter input is zero-padded for analysis
MAX_SEMITONES = 24.0  # two octaves: beyond that WORLD's F0 leaves the range of speech
MIN_RATIO, MAX_RATIO = 1.0, 1.5  # formant ratio magnitudes; 1.5 is about a child's tract against a man's

Semitones = Annotated[float, Field(ge=0.0, le=MAX_SEMITONES)]
Ratio = Annotated[float, Field(ge=MIN_RATIO, le=MAX_RATIO)]


@dataclass(frozen=True)
class ShiftVoice:
    """One pseudo-voice: F0 multiplier and formant (frequency-axis) multiplier."""

    f0_ratio: float
    formant_ratio: float


def _ordered(value, name):
    if value[0] > value[1]:
        raise ValueError(f"{name} must be [low, high] with low <= high, got {list(value)}; swap them")
    return value


class WorldShift(Anonymizer):
    """WORLD vocoder F0 and formant shift with a random pseudo-voice (signal-processing anonymization)."""

    name: ClassVar[str] = "world-shift"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """Ranges the pseudo-voice is drawn from, and WORLD settings."""

        f0_semitones: tuple[Semitones, Semitones] = Field(
            (3.0, 7.0),
            description=f"Size of the F0 shift in semitones, drawn uniformly from [low, high] per voice "
            f"(0 to {MAX_SEMITONES}); its sign comes from `direction`. Equal ends fix the shift.",
        )
        formant_ratio: tuple[Ratio, Ratio] = Field(
            (1.08, 1.2),
            description=f"Size of the formant shift as a frequency ratio, drawn log-uniformly from [low, high] "
            f"({MIN_RATIO} to {MAX_RATIO}); moving down divides by it. 1.0 keeps the formants.",
        )
        direction: Literal["random", "up", "down"] = Field(
            "random", description="Direction of the F0 shift: drawn per voice (even odds), or always up or down."
        )
        formant_direction: Literal["same", "independent"] = Field(
            "same",
            description="'same': formants move the way F0 does (a plausible voice of the other size); "
            "'independent': their direction is drawn on its own.",
        )
        f0_method: Literal["dio", "harvest"] = Field(
            "dio", description="WORLD F0 estimator: dio + stonemask (fast) or harvest (robust, about 10x slower)."
        )
        frame_period: float = Field(5.0, ge=1.0, le=20.0, description="WORLD frame period in ms.")
        normalize: bool = Field(True, description="Scale the output to the input's peak amplitude.")

        @field_validator("f0_semitones")
        @classmethod
        def _f0_ordered(cls, value):
            return _ordered(value, "f0_semitones")

        @field_validator("formant_ratio")
        @classmethod
        def _ratio_ordered(cls, value):
            return _ordered(value, "formant_ratio")

    def pseudo_voice(self, voice: Voice) -> ShiftVoice:
        """The voice's F0 and formant ratios; always four draws from voice.rng, in a fixed order."""
        p, rng = self.params, voice.rng
        sign = 1.0 if rng.random() < 0.5 else -1.0
        formant_sign = 1.0 if rng.random() < 0.5 else -1.0
        semitones = float(rng.uniform(*p.f0_semitones))
        log_ratio = float(rng.uniform(np.log(p.formant_ratio[0]), np.log(p.formant_ratio[1])))
        if p.direction != "random":
            sign = 1.0 if p.direction == "up" else -1.0
        if p.formant_direction == "same":
            formant_sign = sign
        return ShiftVoice(
            f0_ratio=2.0 ** (sign * semitones / 12.0), formant_ratio=float(np.exp(formant_sign * log_ratio))
        )

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        shift = self.pseudo_voice(voice)
        audio = np.asarray(audio, dtype=np.float32)
        return self.convert(audio, sample_rate, shift)

    def convert(self, audio: np.ndarray, rate: int, shift: ShiftVoice) -> np.ndarray:
        p = self.params
        padded = np.zeros(max(len(audio), int(MIN_SECONDS * rate)), dtype=np.float64)
        padded[: len(audio)] = audio
        source = analyse(padded, rate, p.f0_method, p.frame_period)
        shifted = WorldFeatures(
            f0=source.f0 * shift.f0_ratio,
            sp=warp_frequency_axis(source.sp, shift.formant_ratio),
            # Aperiodicity follows the formants so noisy bands stay where their resonances went.
            ap=np.clip(warp_frequency_axis(source.ap, shift.formant_ratio, log_domain=False), 0.0, 1.0),
        )
        out = synthesize(shifted, rate, len(padded), p.frame_period)[: len(audio)]
        if p.normalize:
            peak = float(np.max(np.abs(out)))
            if peak > 0:
                out *= float(np.max(np.abs(audio))) / peak
        return np.nan_to_num(out).astype(np.float32)
