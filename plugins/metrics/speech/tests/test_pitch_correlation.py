import numpy as np
import pytest
import soundfile as sf

from vpeval.api import MetricInputs, PluginContext
from vpeval.types import Corpus, Utterance
from vpeval_speech.pitch_correlation import (
    PitchCorrelation,
    aligned_tracks,
    pitch_correlation,
    pitch_track,
    stretch,
)

RATE = 16000


def intonation(seconds: float, base: float, contour_seed: int, shift: float = 1.0) -> np.ndarray:
    """A voiced-unvoiced sequence with a random smooth F0 contour (same seed: same contour)."""
    rng = np.random.default_rng(contour_seed)
    t = np.arange(int(seconds * RATE)) / RATE
    knots = rng.uniform(-0.25, 0.25, 8)
    f0 = base * shift * 2 ** np.interp(t, np.linspace(0, seconds, 8), knots)
    phase = 2 * np.pi * np.cumsum(f0) / RATE
    voice = sum(0.8**k * np.sin(k * phase) for k in range(1, 12))
    gates = (np.sin(2 * np.pi * 2.5 * t + rng.uniform(0, 6)) > -0.3).astype(float)
    noise = np.random.default_rng(contour_seed + 1000).normal(0, 0.01, t.size)
    return (0.1 * voice * gates + noise).astype(np.float32)


def test_identical_audio_correlates_perfectly():
    audio = intonation(1.5, 150, contour_seed=1)
    track = pitch_track(audio, RATE)
    assert pitch_correlation(track, track)["all"] == pytest.approx(1.0)
    assert pitch_correlation(track, track)["voiced"] == pytest.approx(1.0)


def test_pitch_shifted_copy_correlates_highly_and_unrelated_speech_does_not():
    original = pitch_track(intonation(1.5, 120, contour_seed=2))
    shifted = pitch_track(intonation(1.5, 120, contour_seed=2, shift=1.6))
    unrelated = pitch_track(intonation(1.5, 120, contour_seed=9))
    assert pitch_correlation(original, shifted)["voiced"] > 0.9
    assert pitch_correlation(original, shifted)["all"] > 0.8
    assert pitch_correlation(original, unrelated)["voiced"] < 0.5


def test_alignment_recovers_a_delay_by_brute_force_lag_search():
    rng = np.random.default_rng(0)
    a = np.where(rng.random(200) < 0.6, rng.uniform(80, 300, 200), 0.0)
    b = np.concatenate([a[7:], np.zeros(7)])  # the same contour, 7 frames early
    aligned_a, aligned_b = aligned_tracks(a, b)
    reference_b = b.copy()

    def linear_overlap(lag: int) -> float:  # sum of a[m] * b[m - lag] over the overlap, no wrap-around
        shifted = np.roll(reference_b, lag)
        if lag > 0:
            shifted[:lag] = 0
        elif lag < 0:
            shifted[lag:] = 0
        return float(np.dot(aligned_a, shifted))

    best = max(range(-199, 200), key=linear_overlap)
    assert best == 7
    restored = np.concatenate([np.zeros(7), a[7:]])
    assert pitch_correlation(a, b)["all"] == pytest.approx(np.corrcoef(a, restored)[0, 1])
    assert pitch_correlation(a, b)["voiced"] == pytest.approx(1.0)
    # The toolkit then shifts circularly (np.roll), and so does vpeval.
    np.testing.assert_allclose(aligned_b, np.roll(reference_b, best))
    np.testing.assert_allclose(aligned_a, a)


def test_shorter_track_is_stretched_like_the_toolkit():
    assert stretch(np.array([0.0, 10.0]), 5).tolist() == [0.0, 2.5, 5.0, 7.5, 10.0]
    # Stretching between a voiced value and 0 creates values under 75 Hz, which become unvoiced.
    a, b = aligned_tracks(np.array([0.0, 100.0, 200.0, 100.0, 0.0]), np.array([0.0, 200.0, 0.0]))
    assert len(a) == len(b) == 5 and set(np.unique(b)) <= {0.0, 100.0, 200.0}


def test_metric_mean_over_utterances(tmp_path):
    originals, anonymized = [], []
    for k in range(3):
        for kind, audio, bucket in (
            ("orig", intonation(1.2, 130, contour_seed=k), originals),
            ("anon", intonation(1.2, 130, contour_seed=k, shift=1.4), anonymized),
        ):
            path = tmp_path / f"{kind}{k}.wav"
            sf.write(path, audio, RATE)
            bucket.append(Utterance(f"u{k}", "s", str(path)))
    metric = PitchCorrelation(context=PluginContext())
    result = metric.compute(MetricInputs(original=Corpus("o", originals), anonymized=Corpus("a", anonymized)))[0]
    expected = [
        pitch_correlation(pitch_track(o.load(RATE)), pitch_track(a.load(RATE)))["all"]
        for o, a in zip(originals, anonymized, strict=True)
    ]
    assert result.value == pytest.approx(np.mean(expected))
    assert result.details["std"] == pytest.approx(np.std(expected))
    assert result.details["count"] == 3 and result.value > 0.7
    assert metric.compute(MetricInputs(original=Corpus("o", originals))) == []
