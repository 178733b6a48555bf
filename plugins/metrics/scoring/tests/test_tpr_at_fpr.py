"""tpr-at-fpr against sklearn's roc_curve on random scores, its threshold rule, and its n/a rule."""

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext
from vpeval.plugins import get_plugin_manager
from vpeval.types import Scores
from vpeval_scoring.sorted_trials import SortedTrials
from vpeval_scoring.tpr_at_fpr import tpr_at_fpr

metrics = pytest.importorskip("sklearn.metrics")


def reference(scores, targets, fpr):
    """Largest TPR among sklearn's ROC points (accept score >= threshold) whose FPR is at most `fpr`; of the
    points with that TPR, the lowest threshold (the last one in sklearn's descending order)."""
    far, tpr, thresholds = metrics.roc_curve(targets, scores, drop_intermediate=False)
    ok = far <= fpr + 1e-12
    best = np.where(ok, tpr, -1)
    k = int(np.flatnonzero(best == best.max())[-1])
    return tpr[k], thresholds[k], far[k]


@pytest.mark.parametrize("seed", range(8))
def test_matches_sklearn_roc_curve(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1500, 6000))
    targets = rng.random(n) < rng.uniform(0.05, 0.5)
    scores = rng.normal(targets * rng.uniform(0.5, 3.0), 1.0)
    if seed % 2:
        scores = np.round(scores, 1)  # many ties
    tally = SortedTrials(scores, targets).tally()
    for fpr in (0.05, 0.01, 0.001):
        ours = tpr_at_fpr(tally, fpr)
        if fpr * (~targets).sum() < 1:
            assert np.isnan(ours.tpr) and "non-target trials" in ours.reason
            continue
        tpr, threshold, far = reference(scores, targets, fpr)
        assert ours.tpr == pytest.approx(tpr, abs=1e-12)
        assert ours.fpr == pytest.approx(far, abs=1e-12) and ours.fpr <= fpr
        if np.isfinite(threshold):
            assert ours.threshold == pytest.approx(threshold)
            accepted = scores >= ours.threshold
            assert accepted[targets].mean() == pytest.approx(ours.tpr)
            assert accepted[~targets].mean() == pytest.approx(ours.fpr)


def test_weighted_tally_equals_repeated_trials():
    rng = np.random.default_rng(3)
    targets = rng.random(3000) < 0.3
    scores = rng.normal(targets * 1.5, 1.0)
    weights = rng.integers(0, 3, size=3000)
    trials = SortedTrials(scores, targets)
    repeated = SortedTrials(np.repeat(scores, weights), np.repeat(targets, weights))
    for fpr in (0.01, 0.001):
        assert tpr_at_fpr(trials.tally(weights.astype(float)), fpr).tpr == pytest.approx(
            tpr_at_fpr(repeated.tally(), fpr).tpr
        )


def test_too_few_nontargets_is_nan_with_its_reason():
    cls = get_plugin_manager().get("metric", "tpr-at-fpr")
    rng = np.random.default_rng(0)
    targets = np.arange(600) % 3 == 0  # 400 non-targets: 1 % resolves (4 false alarms), 0.1 % does not
    scores = rng.normal(targets * 2.0, 1.0)
    plugin = cls(cls.Params(bootstrap=20), PluginContext(seed=0))
    results = plugin.compute(MetricInputs(scores=Scores(scores, targets, enroll_speakers=np.arange(600) % 20)))
    one, tenth = results
    assert one.details["fpr"] == 0.01 and np.isfinite(one.value) and one.ci_low is not None
    assert tenth.details["fpr"] == 0.001 and np.isnan(tenth.value)
    assert "at least 1000 non-target trials (here 400)" in tenth.details["reason"]
    genders = np.where(np.arange(600) % 20 < 10, "f", "m")
    gendered = plugin.compute(MetricInputs(scores=Scores(scores, targets, genders, np.arange(600) % 20)))
    averages = [r for r in gendered if r.gender == "avg"]
    assert [r.details["fpr"] for r in averages] == [0.01, 0.001] and "reason" in averages[1].details
    strict = cls(cls.Params(bootstrap=0, fpr=[0.01], min_false_alarms=5), PluginContext(seed=0))
    assert np.isnan(strict.compute(MetricInputs(scores=Scores(scores, targets)))[0].value)


def test_perfect_separation_and_no_separation():
    targets = np.array([True] * 50 + [False] * 500)
    separated = np.where(targets, 2.0, 0.0) + np.linspace(0, 0.1, 550)
    assert tpr_at_fpr(SortedTrials(separated, targets).tally(), 0.01).tpr == 1.0
    # Every target scores below every non-target: at 1 % FPR at most 5 non-targets are accepted, no target.
    inverted = np.where(targets, -2.0, 0.0) + np.linspace(0, 0.1, 550)
    assert tpr_at_fpr(SortedTrials(inverted, targets).tally(), 0.01).tpr == 0.0
