"""The shared quick EER equals a brute-force sweep over every threshold."""

import numpy as np

from vpeval.stats import eer, equal_error_rate


def brute_force(targets, nontargets):
    values = np.unique(np.concatenate([targets, nontargets]))
    candidates = np.concatenate([values, (values[1:] + values[:-1]) / 2])
    best = None
    for t in sorted(candidates):
        fr = np.mean(targets <= t)
        fa = np.mean(nontargets > t)
        if best is None or abs(fa - fr) < best[0]:
            best = (abs(fa - fr), (fa + fr) / 2)
    return best[1]


def test_matches_brute_force_with_and_without_ties():
    rng = np.random.default_rng(0)
    for trial in range(20):
        t = rng.normal(1, 1, 50)
        n = rng.normal(0, 1, 80)
        if trial % 2:
            t, n = np.round(t, 1), np.round(n, 1)
        assert abs(equal_error_rate(t, n) - brute_force(t, n)) < 1e-12


def test_labels_form():
    scores = np.array([0.9, 0.8, 0.3, 0.1])
    assert eer(scores, np.array([True, True, False, False])) == 0.0
    assert eer(scores, np.array([False, False, True, True])) == 1.0


def test_mfcc_scorer_separates_speakers_and_counts_every_cross_pair():
    import numpy as np

    from vpeval.testing.scorers import cosine_trial_eer, mfcc_mean

    vectors = {
        "a1": np.array([1.0, 0.0]),
        "a2": np.array([0.9, 0.1]),
        "b1": np.array([0.0, 1.0]),
        "b2": np.array([0.1, 0.9]),
    }
    speaker = {"a1": "a", "a2": "a", "b1": "b", "b2": "b"}
    assert cosine_trial_eer(vectors, vectors, speaker) == 0.0
    swapped = {"a1": vectors["b1"], "a2": vectors["b2"], "b1": vectors["a1"], "b2": vectors["a2"]}
    assert cosine_trial_eer(vectors, swapped, speaker) == 1.0
    tone = np.sin(2 * np.pi * 200 * np.arange(16000) / 16000).astype(np.float32)
    assert mfcc_mean(tone, 16000).shape == (19,)
