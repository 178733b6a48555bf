"""EER, PLDA and AS-norm against independent brute-force computations on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from vpeval.stats import equal_error_rate
from vpeval_asv.backends import Backend, Plda, cosine_matrix, cosine_pairs


def speechbrain_style_eer(pos: np.ndarray, neg: np.ndarray) -> float:
    """speechbrain.utils.metric_stats.EER written out as its threshold loop."""
    thresholds = np.unique(np.concatenate([pos, neg]))
    thresholds = np.sort(np.concatenate([thresholds, (thresholds[:-1] + thresholds[1:]) / 2]))
    best, best_gap = None, np.inf
    for t in thresholds:
        frr = np.mean(pos <= t)
        far = np.mean(neg > t)
        if abs(far - frr) < best_gap:
            best_gap, best = abs(far - frr), (far + frr) / 2
    return float(best)


@pytest.mark.parametrize("seed", range(6))
def test_eer_equals_the_threshold_loop(seed):
    rng = np.random.default_rng(seed)
    pos = rng.normal(1.0, 1.0, size=rng.integers(5, 60))
    neg = rng.normal(0.0, 1.0, size=rng.integers(5, 200))
    if seed % 2:  # ties between and within classes
        pos, neg = np.round(pos, 1), np.round(neg, 1)
    assert equal_error_rate(pos, neg) == pytest.approx(speechbrain_style_eer(pos, neg), abs=1e-12)


def test_eer_extremes():
    assert equal_error_rate(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 0.0
    assert equal_error_rate(np.array([0.0, 1.0]), np.array([2.0, 3.0])) == 1.0


def test_plda_score_is_the_two_covariance_log_likelihood_ratio():
    rng = np.random.default_rng(0)
    speakers = np.repeat(np.arange(30), 8)
    centres = rng.normal(size=(30, 12)) * 2
    x = centres[speakers] + rng.normal(size=(len(speakers), 12))
    plda = Plda.fit(x, speakers, dim=6)
    z = plda.transform(x[:20])
    za, zb = z[:10], z[10:]
    total = plda.between + plda.within
    joint = np.block([[total, plda.between], [plda.between, total]])
    brute = np.array(
        [
            multivariate_normal(np.zeros(12), joint).logpdf(np.concatenate([a, b]))
            - multivariate_normal(np.zeros(6), total).logpdf(a)
            - multivariate_normal(np.zeros(6), total).logpdf(b)
            for a, b in zip(za, zb)
        ]
    )
    ours = plda.score_transformed(za, zb)
    # Equal up to one constant (the log-determinant terms the score leaves out).
    np.testing.assert_allclose(ours - ours.mean(), brute - brute.mean(), atol=1e-8)
    np.testing.assert_allclose(plda.score_matrix(x[:3], x[3:7])[1, 2], plda.score_pairs(x[1:2], x[5:6])[0])


def test_plda_separates_speakers_better_than_chance():
    rng = np.random.default_rng(1)
    speakers = np.repeat(np.arange(20), 6)
    x = rng.normal(size=(20, 16))[speakers] + 0.7 * rng.normal(size=(120, 16))
    plda = Plda.fit(x, speakers, dim=10)
    i, j = np.triu_indices(120, 1)
    scores = plda.score_pairs(x[i], x[j])
    same = speakers[i] == speakers[j]
    assert equal_error_rate(scores[same], scores[~same]) < 0.1


def test_as_norm_equals_its_definition():
    rng = np.random.default_rng(2)
    cohort = rng.normal(size=(15, 8))
    enroll, test = rng.normal(size=(4, 8)), rng.normal(size=(4, 8))
    backend = Backend("cosine", None, cohort, top_k=5)
    expected = []
    for e, t in zip(enroll, test):
        raw = cosine_pairs(e[None], t[None])[0]
        top_e = np.sort(cosine_matrix(e[None], cohort)[0])[-5:]
        top_t = np.sort(cosine_matrix(t[None], cohort)[0])[-5:]
        expected.append(0.5 * ((raw - top_e.mean()) / top_e.std() + (raw - top_t.mean()) / top_t.std()))
    np.testing.assert_allclose(backend.score(enroll, test), expected, atol=1e-12)


def test_backend_round_trips_through_arrays():
    rng = np.random.default_rng(3)
    speakers = np.repeat(np.arange(6), 4)
    x = rng.normal(size=(24, 8))
    backend = Backend("plda", Plda.fit(x, speakers, 4), x[:6], 3)
    again = Backend.from_arrays({k: np.asarray(v) for k, v in backend.to_arrays().items()})
    np.testing.assert_allclose(again.score(x[:5], x[5:10]), backend.score(x[:5], x[5:10]))
