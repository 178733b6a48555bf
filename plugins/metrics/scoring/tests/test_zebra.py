"""ZEBRA against the published formula on scikit-learn PAV LLRs."""

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from vpeval_scoring.sorted_trials import SortedTrials
from vpeval_scoring.zebra import tag_of, zebra


def pav_llr(scores, targets, laplace):
    x, y = scores, targets.astype(float)
    if laplace:  # one target and one non-target below and above everything
        lo, hi = scores.min() - 1, scores.max() + 1
        x = np.concatenate([[lo, lo], scores, [hi, hi]])
        y = np.concatenate([[1, 0], y, [1, 0]])
    p = IsotonicRegression().fit(x, y).predict(scores)
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p) - np.log(targets.sum() / (~targets).sum())


def int_ece(x, epsilon=1e-6):
    """Z averaged over LLRs, as the ZEBRA reference code writes it."""
    contrib = np.zeros(len(x))
    idx = ~np.isinf(x) & (np.abs(x) > epsilon)
    b = np.exp(x[idx]) - 1
    contrib[idx] = (x[idx] - b) / b**2
    contrib[np.abs(x) <= epsilon] = -0.5
    return 0.25 + contrib.mean() / 2


@pytest.mark.parametrize("ties", [False, True])
def test_dece_and_worst_case_equal_reference(ties):
    rng = np.random.default_rng(3 + ties)
    for _ in range(15):
        n = int(rng.integers(20, 400))
        targets = rng.random(n) < 0.4
        targets[:2] = [True, False]
        scores = rng.normal(targets * rng.uniform(0, 3), 1.0)
        scores = np.round(scores, 1) if ties else scores
        got = zebra(SortedTrials(scores, targets).tally())
        llr = pav_llr(scores, targets, laplace=False)
        dece = (int_ece(llr[targets]) + int_ece(-llr[~targets])) / np.log(2)
        assert got.dece == pytest.approx(dece, abs=1e-6)
        worst = np.abs(pav_llr(scores, targets, laplace=True)).max() / np.log(10)
        assert got.max_abs_log10_lr == pytest.approx(worst, rel=1e-9)
        assert got.tag == tag_of(worst)


def test_tags_follow_the_published_scale():
    assert [tag_of(v) for v in (0.0, 0.5, 1.0, 1.5, 3.0, 4.5, 5.5, 7.0)] == ["0", "A", "A", "B", "C", "D", "E", "F"]


def test_dece_is_zero_without_evidence_and_grows_with_separation():
    rng = np.random.default_rng(0)
    targets = rng.random(2000) < 0.5
    weak = zebra(SortedTrials(rng.normal(targets * 0.5, 1), targets).tally()).dece
    strong = zebra(SortedTrials(rng.normal(targets * 4.0, 1), targets).tally()).dece
    assert 0 < weak < strong
    useless = zebra(SortedTrials(np.r_[np.zeros(5), np.ones(5)], np.r_[[True, False] * 5]).tally())
    assert useless.dece == pytest.approx(0.0, abs=1e-12)
