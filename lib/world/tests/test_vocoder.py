"""The shared WORLD wrapper: analysis-synthesis keeps a voiced tone's pitch, warping moves the envelope."""

import numpy as np

from vpeval_world.vocoder import analyse, synthesize, warp_frequency_axis


def tone(rate=16000, f0=150.0, seconds=0.6):
    t = np.arange(int(rate * seconds)) / rate
    return (0.3 * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 20))).astype(np.float32)


def test_analysis_and_synthesis_keep_the_pitch_and_length_and_repeat_bit_for_bit():
    audio = tone()
    features = analyse(audio, 16000)
    voiced = features.f0[features.f0 > 0]
    assert abs(np.median(voiced) - 150.0) < 3.0
    out = synthesize(features, 16000, len(audio))
    assert len(out) == len(audio)
    again = analyse(audio, 16000)
    assert np.array_equal(features.ap, again.ap) and np.array_equal(features.sp, again.sp)
    assert analyse(audio, 16000, aperiodicity=False).ap is None


def test_warping_moves_a_peak_up_by_the_ratio():
    bins = np.arange(513)
    rows = np.exp(-0.5 * ((bins - 100) / 5.0) ** 2)[None, :] + 1e-6
    warped = warp_frequency_axis(rows, 1.2)
    assert abs(int(np.argmax(warped[0])) - 120) <= 1
