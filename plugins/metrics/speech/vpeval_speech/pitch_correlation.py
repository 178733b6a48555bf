"""Pitch correlation between original and anonymized speech (VoicePrivacy 2022 utility metric).

As the VoicePrivacy 2022 toolkit computes it (baseline/local/pitch_correlation.py): Praat pitch every
10 ms between 75 and 500 Hz on 16 kHz audio; the shorter track linearly stretched to the longer one's
length; values outside 75-500 Hz after stretching set to 0 (unvoiced); the anonymized track circularly
shifted to the peak of the full cross-correlation; Pearson correlation of the two tracks, 0 where it is
undefined; mean and standard deviation over utterances.

The toolkit correlates all frames, unvoiced zeros included (its comment says "excluding unvoiced parts",
its code does not), so voicing agreement counts as much as the pitch contour. `frames="all"` reproduces
that and is the default; `frames="voiced"` correlates only frames voiced in both tracks. Both means are
reported in the details.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params
from vpeval.errors import MetricInputError
from vpeval.types import MetricResult

SAMPLE_RATE = 16000
TIME_STEP, PITCH_FLOOR, PITCH_CEILING = 0.01, 75.0, 500.0


def pitch_track(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Praat F0 in Hz every 10 ms (0 where unvoiced)."""
    import parselmouth

    sound = parselmouth.Sound(np.asarray(audio, dtype=np.float64), sampling_frequency=float(sample_rate))
    pitch = sound.to_pitch(time_step=TIME_STEP, pitch_floor=PITCH_FLOOR, pitch_ceiling=PITCH_CEILING)
    return pitch.selected_array["frequency"]


def stretch(track: np.ndarray, length: int) -> np.ndarray:
    """Linear interpolation of `track` onto `length` evenly spaced points over the same span."""
    if len(track) == length:
        return track.astype(np.float64)
    return np.interp(np.linspace(0, len(track) - 1, length), np.arange(len(track)), track)


def aligned_tracks(original: np.ndarray, anonymized: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both tracks at the longer length, out-of-range values zeroed, anonymized shifted to the xcorr peak."""
    length = max(len(original), len(anonymized))
    a, b = stretch(original, length), stretch(anonymized, length)
    for track in (a, b):
        track[(track < PITCH_FLOOR) | (track > PITCH_CEILING)] = 0.0
    lag = int(np.argmax(np.correlate(a, b, "full"))) - (length - 1)
    return a, np.roll(b, lag)


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation, NaN when either side is constant or has fewer than two values."""
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def pitch_correlation(original: np.ndarray, anonymized: np.ndarray) -> dict[str, float]:
    """Correlation over all frames (VPC 2022) and over frames voiced in both, for two F0 tracks."""
    if len(original) == 0 or len(anonymized) == 0:
        return {"all": float("nan"), "voiced": float("nan")}
    a, b = aligned_tracks(original, anonymized)
    both = (a > 0) & (b > 0)
    return {"all": pearson(a, b), "voiced": pearson(a[both], b[both])}


class PitchCorrelation(Metric):
    """Pitch correlation (VoicePrivacy 2022): lag-aligned Pearson correlation of original and anonymized F0."""

    name = "pitch-correlation"
    needs = "speech"

    class Params(Params):
        frames: Literal["all", "voiced"] = Field(
            "all",
            description="Frames to correlate: 'all' as the VoicePrivacy 2022 toolkit does (unvoiced zeros "
            "included) or 'voiced' (frames voiced in both tracks).",
        )

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        if inputs.original is None:
            raise MetricInputError(
                "The pitch-correlation metric needs evaluation speech (MetricInputs.original is empty)."
            )
        if inputs.anonymized is None:
            self.context.log.info("pitch-correlation compares anonymized with original speech; none given")
            return []
        pairs = [(u, inputs.anonymized[u.id]) for u in inputs.original if u.id in inputs.anonymized]
        if not pairs:
            raise MetricInputError(
                f"No utterance id of corpus {inputs.anonymized.name} matches the original evaluation speech "
                f"{inputs.original.name}, so pitch-correlation has nothing to compare."
            )
        values: dict[str, list[float]] = {"all": [], "voiced": []}
        for original, anonymized in self.context.progress(pairs, total=len(pairs), description="pitch correlation"):
            correlations = pitch_correlation(
                pitch_track(original.load(SAMPLE_RATE)), pitch_track(anonymized.load(SAMPLE_RATE))
            )
            for frames, value in correlations.items():
                values[frames].append(value)
        chosen = np.array(values[self.params.frames])
        undefined = int(np.isnan(chosen).sum())
        # The toolkit turns an undefined correlation (a flat or unvoiced track) into 0.
        means = {frames: float(np.nan_to_num(np.array(v)).mean()) for frames, v in values.items()}
        return [
            MetricResult(
                metric=self.name,
                value=means[self.params.frames],
                details={
                    "speech": "anonymized",
                    "frames": self.params.frames,
                    "std": float(np.nan_to_num(chosen).std()),
                    "count": len(chosen),
                    "undefined_as_zero": undefined,
                    "missing_anonymized": len(inputs.original) - len(pairs),
                    "mean_all_frames": means["all"],
                    "mean_voiced_frames": means["voiced"],
                },
            )
        ]
