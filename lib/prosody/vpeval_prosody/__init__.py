"""Prosodic features of an utterance: the emotion evaluator's default input (vpeval-speech-metrics) and
emotion compensation's audio indicator (vpeval-embedding-anonymizers).

A library distribution (vpeval-prosody), not a plugin: it registers nothing, so plugins share it
without importing each other. Plugins key their feature caches by FEATURE_VERSION: change it with
any change that moves a number.

Built on Praat (parselmouth): pitch level and spread, pitch movement, voicing, tempo, loudness spread,
spectral balance and harmonicity, the cues acted emotions (and the synth corpus's styles) vary. Pitch
is tracked twice, the second time between 0.75 x the first quartile and 1.5 x the third (Hirst's
two-pass rule), and summarised by robust statistics, because octave errors of a fixed 75-500 Hz search
swamp the pitch-range cue otherwise.
"""

from __future__ import annotations

import numpy as np

RATE = 16000
FEATURE_VERSION = "praat-two-pass-1"
FEATURE_NAMES = (
    "f0_median_st",
    "f0_mad_st",
    "f0_p90_p10_st",
    "f0_iqr_st",
    "f0_step_median_st",
    "voiced_fraction",
    "voiced_onsets_per_second",
    "voiced_onsets_per_voiced_second",
    "intensity_std_db",
    "intensity_p90_p10_db",
    "band_balance_db",
    "hnr_db",
    "log_duration",
)
N_FEATURES = len(FEATURE_NAMES)
FIRST_PASS = (60.0, 600.0)
TIME_STEP = 0.01


def pitch_floor_ceiling(sound) -> tuple[float, float]:
    """Hirst's speaker-adapted pitch search range from a wide first pass."""
    f0 = sound.to_pitch(time_step=TIME_STEP, pitch_floor=FIRST_PASS[0], pitch_ceiling=FIRST_PASS[1])
    voiced = f0.selected_array["frequency"]
    voiced = voiced[voiced > 0]
    if voiced.size < 3:
        return FIRST_PASS
    q1, q3 = np.percentile(voiced, [25, 75])
    return max(0.75 * q1, 40.0), min(1.5 * q3, 800.0)


def prosodic_features(audio: np.ndarray, rate: int = RATE) -> np.ndarray:
    """[N_FEATURES] utterance-level features, in the order of FEATURE_NAMES."""
    import parselmouth
    from parselmouth.praat import call

    x = np.asarray(audio, dtype=np.float64)
    if len(x) < rate // 5:  # Praat's analyses need a few pitch periods
        x = np.pad(x, (0, rate // 5 - len(x)))
    sound = parselmouth.Sound(x, sampling_frequency=float(rate))
    floor, ceiling = pitch_floor_ceiling(sound)
    f0 = sound.to_pitch(time_step=TIME_STEP, pitch_floor=floor, pitch_ceiling=ceiling).selected_array["frequency"]
    voiced = f0 > 0
    semitones = 12.0 * np.log2(f0[voiced] / 27.5) if voiced.sum() > 2 else np.zeros(3)
    median = np.median(semitones)
    p10, p25, p75, p90 = np.percentile(semitones, [10, 25, 75, 90])
    onsets = np.count_nonzero(np.diff(voiced.astype(int)) == 1)
    seconds = len(x) / rate
    intensity = sound.to_intensity(minimum_pitch=floor, time_step=TIME_STEP).values[0]
    loud = intensity[intensity > intensity.max() - 35]
    ltas = call(sound, "To Ltas", 100)
    balance = call(ltas, "Get mean", 1000, 4000, "energy") - call(ltas, "Get mean", 0, 1000, "energy")
    hnr = call(sound.to_harmonicity_cc(TIME_STEP, floor, 0.1, 1.0), "Get mean", 0, 0)
    return np.nan_to_num(
        np.array(
            [
                median,
                np.median(np.abs(semitones - median)),
                p90 - p10,
                p75 - p25,
                np.median(np.abs(np.diff(semitones))) if semitones.size > 1 else 0.0,
                voiced.mean(),
                onsets / seconds,
                onsets / max(voiced.sum() * TIME_STEP, 0.1),
                loud.std(),
                np.percentile(loud, 90) - np.percentile(loud, 10),
                balance,
                hnr,
                np.log(seconds),
            ]
        )
    )
