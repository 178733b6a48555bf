"""Linkability D_sys against a direct loop over histogram bins."""

import math

import numpy as np
import pytest

from vpeval_scoring.linkability import linkability


def loop_linkability(mated, non_mated, omega=1.0):
    n_bins = min(int(len(mated) / 10), 100)
    lo, hi = min(min(mated), min(non_mated)), max(max(mated), max(non_mated))
    width = (hi - lo) / n_bins
    edges = [lo + i * width for i in range(n_bins)] + [hi]

    def density(values):
        counts = [0] * n_bins
        for v in values:
            for i in range(n_bins):
                last = i == n_bins - 1
                if edges[i] <= v < edges[i + 1] or (last and v == edges[i + 1]):
                    counts[i] += 1
                    break
        return [c / (len(values) * (edges[i + 1] - edges[i])) for i, c in enumerate(counts)]

    y1, y2 = density(mated), density(non_mated)
    local = []
    for a, b in zip(y1, y2):
        if b == 0:
            local.append(1.0 if a != 0 else 0.0)
            continue
        lr = omega * a / b
        local.append(2 * lr / (1 + lr) - 1 if lr > 1 else 0.0)
    centres = [(edges[i] + edges[i + 1]) / 2 for i in range(n_bins)]
    f = [d * y for d, y in zip(local, y1)]
    return sum((centres[i + 1] - centres[i]) * (f[i] + f[i + 1]) / 2 for i in range(n_bins - 1))


@pytest.mark.parametrize("omega", [1.0, 0.5])
def test_linkability_equals_loop(omega):
    rng = np.random.default_rng(int(omega * 10))
    for _ in range(10):
        n = int(rng.integers(100, 1500))
        targets = rng.random(n) < 0.4
        scores = rng.normal(targets * rng.uniform(0, 4), 1.0)
        got = linkability(scores, targets, omega=omega)
        ref = loop_linkability(scores[targets].tolist(), scores[~targets].tolist(), omega)
        assert got.value == pytest.approx(ref, abs=1e-12)
        assert got.n_bins == min(int(targets.sum() / 10), 100)


def test_linkability_extremes():
    rng = np.random.default_rng(1)
    targets = rng.random(4000) < 0.5
    separated = np.where(targets, rng.uniform(10, 11, 4000), rng.uniform(0, 1, 4000))
    # below 1 only because the reference's trapezoid rule over bin centres drops half of the edge bins
    assert linkability(separated, targets).value > 0.9
    same = rng.normal(0, 1, 4000)
    assert linkability(same, targets).value < 0.15
    few = np.array([True] * 9 + [False] * 20)
    assert math.isnan(linkability(np.arange(29.0), few).value)  # under 10 mated scores: no bin
