"""Normalised minDCF against a plain threshold sweep."""

import numpy as np
import pytest

from vpeval_scoring.dcf import min_dcf
from vpeval_scoring.sorted_trials import SortedTrials


def sweep_min_dcf(scores, targets, p, c_miss, c_fa):
    tar = [s for s, t in zip(scores, targets) if t]
    non = [s for s, t in zip(scores, targets) if not t]
    best = float("inf")
    for t in [float("-inf")] + sorted(set(scores)):
        p_miss = sum(s <= t for s in tar) / len(tar)
        p_fa = sum(s > t for s in non) / len(non)
        best = min(best, c_miss * p * p_miss + c_fa * (1 - p) * p_fa)
    return best / min(c_miss * p, c_fa * (1 - p))


@pytest.mark.parametrize("p_target,c_miss,c_fa", [(0.01, 1, 1), (0.001, 1, 1), (0.5, 1, 1), (0.9, 1, 1), (0.05, 10, 1)])
def test_min_dcf_equals_sweep(p_target, c_miss, c_fa):
    rng = np.random.default_rng(int(p_target * 1000) + c_miss)
    for _ in range(15):
        n = int(rng.integers(5, 300))
        targets = rng.random(n) < 0.3
        targets[:2] = [True, False]
        scores = np.round(rng.normal(targets * 2.0, 1.0), int(rng.integers(1, 4)))
        got = min_dcf(SortedTrials(scores, targets).tally(), p_target, c_miss, c_fa)
        assert got.value == pytest.approx(
            sweep_min_dcf(scores.tolist(), targets.tolist(), p_target, c_miss, c_fa), abs=1e-12
        )
        assert got.value <= 1.0 + 1e-12


def test_min_dcf_reports_its_operating_point():
    scores = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    targets = np.array([False, True, False, True, True])
    r = min_dcf(SortedTrials(scores, targets).tally(), 0.5)
    assert r.threshold == 2.0 and r.p_miss == pytest.approx(1 / 3) and r.p_fa == 0.0
    assert r.value == pytest.approx((0.5 * r.p_miss + 0.5 * r.p_fa) / 0.5)
