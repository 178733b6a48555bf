"""Actual Cllr against its formula, min Cllr and PAV LLRs against scikit-learn's isotonic regression."""

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from vpeval_scoring.cllr import actual_cllr, min_cllr
from vpeval_scoring.pav import pav
from vpeval_scoring.sorted_trials import SortedTrials


def reference_pav_llr(scores, targets):
    """Per-trial PAV LLRs through sklearn (ties pooled, as sklearn does): logit(P) - log(Nt / Nn)."""
    posterior = IsotonicRegression(increasing=True).fit(scores, targets.astype(float)).predict(scores)
    with np.errstate(divide="ignore"):
        logit = np.log(posterior) - np.log1p(-posterior)
    return logit - np.log(targets.sum() / (~targets).sum())


def reference_cllr(llr, targets):
    tar = [np.logaddexp(0, -x) / np.log(2) for x in llr[targets]]
    non = [np.logaddexp(0, x) / np.log(2) for x in llr[~targets]]
    return 0.5 * (sum(tar) / len(tar) + sum(non) / len(non))


def random_set(rng, n, ties):
    targets = rng.random(n) < rng.uniform(0.1, 0.7)
    targets[:2] = [True, False]
    scores = rng.normal(targets * rng.uniform(0.2, 4), rng.uniform(0.5, 2))
    return (np.round(scores, 1) if ties else scores), targets


def test_actual_cllr_equals_formula():
    rng = np.random.default_rng(0)
    for _ in range(20):
        scores, targets = random_set(rng, int(rng.integers(5, 300)), False)
        assert actual_cllr(scores, targets) == pytest.approx(reference_cllr(scores, targets), rel=1e-12)


def test_actual_cllr_known_values():
    # LLR 0 everywhere is the uninformative system: 1 bit; well-calibrated strong evidence: near 0
    assert actual_cllr(np.zeros(4), np.array([True, False, True, False])) == pytest.approx(1.0)
    assert actual_cllr(np.array([30.0, -30.0]), np.array([True, False])) < 1e-12


@pytest.mark.parametrize("ties", [False, True])
def test_min_cllr_equals_sklearn_pav(ties):
    rng = np.random.default_rng(5 + ties)
    for _ in range(20):
        scores, targets = random_set(rng, int(rng.integers(5, 400)), ties)
        got = min_cllr(SortedTrials(scores, targets).tally())
        assert got == pytest.approx(reference_cllr(reference_pav_llr(scores, targets), targets), rel=1e-9, abs=1e-12)
        assert got <= 1.0 + 1e-12  # PAV never does worse than the uninformative LLR 0


@pytest.mark.parametrize("ties", [False, True])
def test_pav_llrs_per_trial_equal_sklearn(ties):
    rng = np.random.default_rng(20 + ties)
    scores, targets = random_set(rng, 300, ties)
    trials = SortedTrials(scores, targets)
    got = trials.per_trial(pav(trials.tally()).group_llr())
    np.testing.assert_allclose(got, reference_pav_llr(scores, targets), rtol=1e-9, atol=1e-12)


def test_min_cllr_is_at_most_one_bit_and_invariant_to_monotone_maps():
    rng = np.random.default_rng(7)
    scores, targets = random_set(rng, 500, False)
    base = min_cllr(SortedTrials(scores, targets).tally())
    assert 0 < base <= 1.0
    assert min_cllr(SortedTrials(np.exp(3 * scores), targets).tally()) == pytest.approx(base, rel=1e-12)
