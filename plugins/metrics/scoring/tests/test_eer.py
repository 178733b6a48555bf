"""Step EER against an exhaustive threshold sweep, ROCCH-EER against the Bayes-error identity."""

from fractions import Fraction

import numpy as np
import pytest

from vpeval_scoring.eer import rocch_eer, step_eer
from vpeval_scoring.sorted_trials import SortedTrials


def sweep_step_eer(scores, targets):
    """SpeechBrain's loop, in exact arithmetic: thresholds = unique scores and midpoints, first minimum."""
    tar = [s for s, t in zip(scores, targets) if t]
    non = [s for s, t in zip(scores, targets) if not t]
    unique = sorted(set(scores))
    candidates = sorted(unique + [(a + b) / 2 for a, b in zip(unique, unique[1:])])
    best = None
    for t in candidates:
        frr = Fraction(sum(1 for s in tar if s <= t), len(tar))
        far = Fraction(sum(1 for s in non if s > t), len(non))
        if best is None or abs(far - frr) < best[0]:
            best = (abs(far - frr), float((far + frr) / 2), t)
    return best[1], best[2]


def bayes_rocch_eer(scores, targets):
    """ROCCH-EER = max over the prior p of min over thresholds of p P_miss + (1 - p) P_fa (Brummer)."""
    tar, non = scores[targets], scores[~targets]
    thresholds = np.concatenate([[-np.inf], np.unique(scores)])
    p_miss = np.array([(tar <= t).mean() for t in thresholds])
    p_fa = np.array([(non > t).mean() for t in thresholds])
    bayes = lambda p: np.min(p * p_miss + (1 - p) * p_fa)  # noqa: E731  concave in p
    lo, hi = 0.0, 1.0
    for _ in range(200):  # ternary search on a concave function
        a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        lo, hi = (a, hi) if bayes(a) < bayes(b) else (lo, b)
    return bayes((lo + hi) / 2)


def random_set(rng, n, ties):
    targets = rng.random(n) < rng.uniform(0.1, 0.6)
    targets[:2] = [True, False]
    scores = rng.normal(targets * rng.uniform(0, 3), 1.0)
    if ties:
        scores = np.round(scores, 1)
    return scores, targets


@pytest.mark.parametrize("ties", [False, True])
def test_step_eer_equals_exhaustive_sweep(ties):
    rng = np.random.default_rng(1 + ties)
    for _ in range(25):
        scores, targets = random_set(rng, int(rng.integers(5, 150)), ties)
        got = step_eer(SortedTrials(scores, targets).tally())
        eer, threshold = sweep_step_eer(scores.tolist(), targets.tolist())
        assert got.eer == pytest.approx(eer, abs=1e-12)
        assert got.threshold == threshold


def test_step_eer_weighted_equals_repeated_trials():
    rng = np.random.default_rng(3)
    scores, targets = random_set(rng, 80, ties=True)
    weights = rng.integers(0, 4, len(scores)).astype(float)
    weights[:2] = 1
    repeated = SortedTrials(np.repeat(scores, weights.astype(int)), np.repeat(targets, weights.astype(int))).tally()
    weighted = SortedTrials(scores, targets).tally(weights)
    assert step_eer(weighted).eer == pytest.approx(step_eer(repeated).eer, abs=1e-12)
    assert rocch_eer(weighted).eer == pytest.approx(rocch_eer(repeated).eer, abs=1e-12)


@pytest.mark.parametrize("ties", [False, True])
def test_rocch_eer_equals_max_min_bayes_error(ties):
    rng = np.random.default_rng(10 + ties)
    for _ in range(25):
        scores, targets = random_set(rng, int(rng.integers(5, 200)), ties)
        got = rocch_eer(SortedTrials(scores, targets).tally()).eer
        assert got == pytest.approx(bayes_rocch_eer(scores, targets), abs=1e-9)


def test_rocch_never_exceeds_step_eer_much_and_known_values():
    # perfectly separated: both 0; fully overlapping identical distributions: both near 50 %
    scores = np.array([0.1, 0.2, 0.8, 0.9])
    targets = np.array([False, False, True, True])
    trials = SortedTrials(scores, targets).tally()
    assert step_eer(trials).eer == 0.0
    assert rocch_eer(trials).eer == 0.0
    inverted = SortedTrials(scores, ~targets).tally()
    assert step_eer(inverted).eer == 1.0  # every target below every non-target
    assert rocch_eer(inverted).eer == 0.5  # the hull of a useless system is the diagonal
