"""vpeval-prosody on synthetic voiced sounds whose pitch, length and loudness contour are known."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval_prosody import FEATURE_NAMES, N_FEATURES, RATE, prosodic_features


def voiced(f0: float, seconds: float, tremolo: float = 0.0) -> np.ndarray:
    """A glottal-pulse-like harmonic sound at f0 with an optional 3 Hz loudness swing."""
    t = np.arange(int(seconds * RATE)) / RATE
    wave = sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 12))
    envelope = 1.0 + tremolo * np.sin(2 * np.pi * 3.0 * t)
    return (0.1 * wave * envelope).astype(np.float32)


def feature(values: np.ndarray, name: str) -> float:
    return float(values[FEATURE_NAMES.index(name)])


def test_shape_and_names():
    values = prosodic_features(voiced(150.0, 1.0))
    assert values.shape == (N_FEATURES,) == (len(FEATURE_NAMES),) and np.isfinite(values).all()


def test_pitch_level_in_semitones_follows_f0():
    low, high = prosodic_features(voiced(120.0, 1.0)), prosodic_features(voiced(220.0, 1.0))
    expected = 12.0 * np.log2(220.0 / 120.0)
    assert feature(high, "f0_median_st") - feature(low, "f0_median_st") == pytest.approx(expected, abs=0.3)
    assert feature(low, "f0_median_st") == pytest.approx(12.0 * np.log2(120.0 / 27.5), abs=0.3)
    assert feature(low, "voiced_fraction") > 0.8


def test_duration_and_loudness_spread():
    steady, swinging = prosodic_features(voiced(150.0, 2.0)), prosodic_features(voiced(150.0, 2.0, tremolo=0.8))
    assert feature(steady, "log_duration") == pytest.approx(np.log(2.0), abs=1e-6)
    assert feature(swinging, "intensity_std_db") > feature(steady, "intensity_std_db") + 2.0


@pytest.mark.parametrize("samples", [0, 100, RATE // 10])
def test_short_and_silent_input_stays_finite(samples):
    assert np.isfinite(prosodic_features(np.zeros(samples, np.float32))).all()
    assert np.isfinite(prosodic_features(voiced(150.0, samples / RATE))).all()
