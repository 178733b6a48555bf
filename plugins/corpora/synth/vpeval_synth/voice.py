"""Per-speaker voices: an espeak-ng voice file (formants, pitch, breath) and a speaking rate.

On a prototype the settings that made espeak-ng speakers most distinct were the formant frequency
multipliers (overall vocal-tract scale and per formant), formant height and width, pitch base and
range, and breath; tone, flutter, roughness and voicing add little. espeak-ng's own `breath` and
`flutter` make its output depend on what was synthesized before (see espeak.py), so breathiness is
added here instead: aspiration noise in the formant region that follows the speech envelope.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Median F0 (Hz) of adult speech by gender group: mean, spread, and the clip range.
F0_BANDS = {"m": (118.0, 16.0, 85.0, 160.0), "f": (208.0, 20.0, 165.0, 255.0)}
# Vocal-tract scale as espeak-ng's formant frequency percentage (stock voice = 100).
TRACT_SCALE = {"m": (97.0, 4.0), "f": (113.0, 4.0)}
# Spreads (standard deviations, in percent) of each formant's own frequency, height and width.
FORMANT_SD, HEIGHT_SD, WIDTH_SD = 3.0, 22.0, 25.0
# Speaking rate mean and spread, words per minute: espeak-ng at 165 wpm gave Whisper tiny.en
# about 28 % WER here, at 150 wpm about 22 %.
RATE_WPM = (150.0, 15.0)

# Speaker groups (the corpus's `speaker_groups`): an age and an accent group per speaker, each shaping the
# voice drawn above. Ages are drawn within three bands whose declared edges are AGE_EDGES (the breakdown's
# `bands: {age: [30, 50]}`); a speaker's band and accent come from its index, so genders, bands and accents
# are balanced (every combination once per 18 speakers).
AGE_RANGES = ((20, 29), (30, 49), (50, 75))
AGE_EDGES = (30, 50)
# Accent groups are synthetic: a vowel-quality shift (formant 1, 2 and 3 frequency, % of the voice's own), a
# speaking-rate factor and an intonation-width factor. North: open, back vowels, slow and flat; south:
# close, front vowels, fast and lively; west: a lowered third formant (r-coloured vowels).
ACCENTS = {
    "north": (7, -6, 0, 0.92, 0.8),
    "south": (-6, 6, 0, 1.08, 1.35),
    "west": (0, 0, -9, 1.0, 1.0),
}


@dataclass
class VoiceProfile:
    gender: str
    f0_median: float  # Hz, what the speaker's neutral speech aims at
    pitch_width: float  # Hz between espeak-ng's pitch base and max: how lively the intonation is
    formants: list[tuple[int, int, int]]  # (frequency %, height %, width %) for formants 0..8
    breath_db: float | None  # aspiration noise level relative to the speech, None = not breathy
    roughness: int
    rate_wpm: float  # neutral speaking rate, words per minute

    @classmethod
    def draw(cls, gender: str, rng: np.random.Generator, spread: float = 1.0) -> VoiceProfile:
        """A random voice of the gender group; `spread` scales how far voices differ."""
        mean, sd, low, high = F0_BANDS[gender]
        f0 = float(np.clip(mean + spread * sd * rng.standard_normal(), low, high))
        width = float(rng.uniform(0.1, 0.6) * f0)
        scale_mean, scale_sd = TRACT_SCALE[gender]
        scale = scale_mean + spread * scale_sd * rng.standard_normal()
        formants = []
        for k in range(9):
            own = 0.0 if k == 0 or k > 5 else spread * FORMANT_SD * rng.standard_normal()
            frequency = int(round(scale + own))
            height = int(round(100 + spread * HEIGHT_SD * rng.standard_normal())) if 1 <= k <= 5 else 100
            width_pct = int(round(100 + spread * WIDTH_SD * rng.standard_normal())) if 1 <= k <= 5 else 100
            formants.append((frequency, int(np.clip(height, 50, 160)), int(np.clip(width_pct, 60, 170))))
        breathy = rng.random() < 0.35
        breath_db = float(rng.uniform(-28, -16)) if breathy else None
        return cls(
            gender=gender,
            f0_median=f0,
            pitch_width=width,
            formants=formants,
            breath_db=breath_db,
            roughness=int(rng.integers(0, 4)),
            rate_wpm=float(np.clip(RATE_WPM[0] + spread * RATE_WPM[1] * rng.standard_normal(), 125, 215)),
        )

    def shaped(self, age: int, accent: str) -> VoiceProfile:
        """This voice as spoken at `age` (years) with `accent` (one of ACCENTS). Relative to age 40: women's
        F0 falls 0.3 % a year and men's rises 0.3 % a year after 50; speech slows and intonation flattens
        0.4 % a year; formants fall 0.08 points a year (a longer vocal tract); voices roughen after 50."""
        df1, df2, df3, rate, width = ACCENTS[accent]
        years = age - 40
        f0 = self.f0_median * (1 - 0.003 * years if self.gender == "f" else 1 + 0.003 * max(0, age - 50))
        tract = -0.08 * years
        shift = {1: df1, 2: df2, 3: df3}
        formants = [
            (int(round(f + tract + shift.get(k, 0) * f / 100)), h, w) for k, (f, h, w) in enumerate(self.formants)
        ]
        return VoiceProfile(
            gender=self.gender,
            f0_median=float(f0),
            pitch_width=float(self.pitch_width * (1 - 0.004 * years) * width),
            formants=formants,
            breath_db=self.breath_db,
            roughness=min(7, self.roughness + (age >= 50) + (age >= 62)),
            rate_wpm=float(self.rate_wpm * (1 - 0.004 * years) * rate),
        )

    def pitch_base_max(self) -> tuple[int, int]:
        """espeak-ng's `pitch base max` for the wanted median.

        espeak-ng's median F0 is not the base: measured here it is about 0.2 * base + 0.74 * max.
        """
        base = (self.f0_median - 0.74 * self.pitch_width) / 0.94
        return int(round(base)), int(round(base + self.pitch_width))

    def voice_lines(self) -> str:
        base, top = self.pitch_base_max()
        lines = [f"gender {'female' if self.gender == 'f' else 'male'}", f"pitch {base} {top}"]
        lines += [f"formant {k} {f} {h} {w}" for k, (f, h, w) in enumerate(self.formants)]
        lines.append(f"roughness {self.roughness}")
        return "\n".join(lines)


def add_breath(speech: np.ndarray, rate: int, level_db: float | None, rng: np.random.Generator) -> np.ndarray:
    """Speech with aspiration noise (1.2-5 kHz) that follows its 20 ms envelope, `level_db` below it."""
    if level_db is None or not np.any(speech):
        return speech
    from scipy import signal

    band = signal.butter(2, [1200, min(5000, 0.45 * rate)], btype="bandpass", fs=rate, output="sos")
    noise = signal.sosfilt(band, rng.standard_normal(len(speech)))
    window = max(1, int(0.02 * rate))
    envelope = np.convolve(np.abs(speech), np.ones(window) / window, mode="same")
    breath = noise * envelope
    breath *= np.sqrt(np.mean(speech**2) / max(np.mean(breath**2), 1e-20)) * 10 ** (level_db / 20)
    return (speech + breath).astype(np.float32)
