"""Pseudo-voices for espeak-ng: F0, intonation width, vocal-tract scale, formant detail, speaking rate.

Drawn from the voice's generator within adult ranges (the same kind of ranges the built-in corpus uses
for its speakers, chosen here independently): a pseudo-speaker is a random adult voice of a random
(or a fixed) gender group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Median F0 (Hz) by gender group: mean, spread, clip range.
F0_BANDS = {"m": (118.0, 18.0, 85.0, 165.0), "f": (210.0, 22.0, 160.0, 265.0)}
# Vocal-tract scale as espeak-ng's formant frequency percentage (stock voice = 100).
TRACT_SCALE = {"m": (97.0, 4.0), "f": (113.0, 4.0)}
FORMANT_SD, HEIGHT_SD, WIDTH_SD = 3.0, 20.0, 20.0  # percent spreads of formants 1-5
# espeak-ng medians measured on the built-in corpus: median F0 = 0.2 * base + 0.74 * max.
MEDIAN_BASE, MEDIAN_MAX = 0.2, 0.74


@dataclass(frozen=True)
class PseudoVoice:
    gender: str
    f0_median: float  # Hz
    pitch_width: float  # Hz between espeak-ng's pitch base and max
    formants: tuple[tuple[int, int, int], ...]  # (frequency %, height %, width %) for formants 0..8
    rate_wpm: float

    @classmethod
    def draw(cls, rng: np.random.Generator, gender: str, rate_wpm: tuple[float, float]) -> PseudoVoice:
        """A voice from a fixed sequence of draws (the gender draw is made even when it is fixed)."""
        drawn = "f" if rng.random() < 0.5 else "m"
        gender = drawn if gender == "random" else gender
        mean, sd, low, high = F0_BANDS[gender]
        f0 = float(np.clip(mean + sd * rng.standard_normal(), low, high))
        width = float(rng.uniform(0.15, 0.5) * f0)
        scale_mean, scale_sd = TRACT_SCALE[gender]
        scale = scale_mean + scale_sd * rng.standard_normal()
        offsets = rng.standard_normal((9, 3))
        formants = []
        for k in range(9):
            own = 1 <= k <= 5
            frequency = int(round(scale + (FORMANT_SD * offsets[k, 0] if own else 0.0)))
            height = int(np.clip(round(100 + HEIGHT_SD * offsets[k, 1]), 50, 160)) if own else 100
            width_pct = int(np.clip(round(100 + WIDTH_SD * offsets[k, 2]), 60, 170)) if own else 100
            formants.append((frequency, height, width_pct))
        rate = float(rng.uniform(*rate_wpm))
        return cls(gender, f0, width, tuple(formants), rate)

    def voice_lines(self) -> str:
        """The espeak-ng voice-file lines: gender, pitch base and max, formants."""
        base = (self.f0_median - MEDIAN_MAX * self.pitch_width) / (MEDIAN_BASE + MEDIAN_MAX)
        lines = [
            f"gender {'female' if self.gender == 'f' else 'male'}",
            f"pitch {int(round(base))} {int(round(base + self.pitch_width))}",
        ]
        lines += [f"formant {k} {f} {h} {w}" for k, (f, h, w) in enumerate(self.formants)]
        return "\n".join(lines)
