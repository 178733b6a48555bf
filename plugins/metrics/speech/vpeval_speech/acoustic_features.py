"""Utterance-level acoustic functionals for the emotion evaluator, in the spirit of eGeMAPS.

Low-level descriptors every 10 ms from Praat (parselmouth): F0 in semitones re 27.5 Hz (75-500 Hz),
intensity (dB), harmonics-to-noise ratio (dB) and 12 MFCCs plus c0 with their deltas; each summarised by
the functionals eGeMAPS uses most (mean, standard deviation, 20/50/80th percentiles, range), plus
voicing fraction and rate of voiced segments (a tempo cue).
"""

from __future__ import annotations

import numpy as np

FEATURE_VERSION = "praat-functionals-2"
TIME_STEP = 0.01
PITCH_FLOOR, PITCH_CEILING = 75.0, 500.0
MFCC_COEFFICIENTS = 12  # Praat adds c0, so 13 rows


def percentile_stats(values: np.ndarray, prefix: str) -> dict[str, float]:
    if values.size == 0:
        return {f"{prefix}_{name}": 0.0 for name in ("mean", "std", "p20", "p50", "p80", "range2080", "delta")}
    p20, p50, p80 = np.percentile(values, [20, 50, 80])
    return {
        f"{prefix}_mean": float(values.mean()),
        f"{prefix}_std": float(values.std()),
        f"{prefix}_p20": float(p20),
        f"{prefix}_p50": float(p50),
        f"{prefix}_p80": float(p80),
        f"{prefix}_range2080": float(p80 - p20),
        f"{prefix}_delta": float(np.abs(np.diff(values)).mean()) if values.size > 1 else 0.0,
    }


def functionals(audio: np.ndarray, sample_rate: int) -> dict[str, float]:
    """Named utterance-level features of mono audio (same names and order for every utterance)."""
    import parselmouth

    audio = np.asarray(audio, dtype=np.float64)
    # Praat's intensity and pitch analyses need a few pitch periods; pad very short clips with silence.
    shortest = int(0.2 * sample_rate)
    if audio.size < shortest:
        audio = np.pad(audio, (0, shortest - audio.size))
    sound = parselmouth.Sound(audio, sampling_frequency=float(sample_rate))
    duration = audio.size / sample_rate

    pitch = sound.to_pitch(time_step=TIME_STEP, pitch_floor=PITCH_FLOOR, pitch_ceiling=PITCH_CEILING)
    f0 = pitch.selected_array["frequency"]
    voiced = f0 > 0
    # HNR from the normalised autocorrelation peak r of voiced frames, 10 log10(r / (1 - r)), as Praat's
    # AC harmonicity defines it; reusing the pitch analysis is ten times cheaper than a separate one.
    strength = np.clip(pitch.selected_array["strength"][voiced], 1e-6, 1 - 1e-6)
    hnr = 10.0 * np.log10(strength / (1.0 - strength))
    semitones = 12.0 * np.log2(f0[voiced] / 27.5)
    onsets = int(np.count_nonzero(np.diff(voiced.astype(int)) == 1) + (1 if voiced[:1].any() else 0))

    intensity = sound.to_intensity(minimum_pitch=PITCH_FLOOR, time_step=TIME_STEP).values[0]

    features: dict[str, float] = {
        "voiced_fraction": float(voiced.mean()) if voiced.size else 0.0,
        "voiced_segments_per_second": onsets / duration,
    }
    features |= percentile_stats(semitones, "f0_semitone")
    features |= percentile_stats(intensity, "intensity_db")
    features["hnr_mean"] = float(hnr.mean()) if hnr.size else 0.0
    features["hnr_std"] = float(hnr.std()) if hnr.size else 0.0

    mfcc = sound.to_mfcc(number_of_coefficients=MFCC_COEFFICIENTS, window_length=0.025, time_step=TIME_STEP)
    mfcc = mfcc.to_array()  # [13, frames], c0 first
    delta = np.diff(mfcc, axis=1) if mfcc.shape[1] > 1 else np.zeros_like(mfcc)
    for index in range(mfcc.shape[0]):
        features[f"mfcc{index}_mean"] = float(mfcc[index].mean())
        features[f"mfcc{index}_std"] = float(mfcc[index].std())
        features[f"mfcc{index}_delta_mean"] = float(delta[index].mean())
        features[f"mfcc{index}_delta_std"] = float(delta[index].std())
    return features
