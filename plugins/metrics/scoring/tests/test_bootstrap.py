"""Speaker-level bootstrap confidence intervals."""

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext
from vpeval.plugins import get_plugin_manager
from vpeval.types import Scores
from vpeval_scoring.bootstrap import percentile_interval, speaker_weights


def speaker_scores(speakers, per=40, seed=0):
    """Trials correlated within a speaker (a per-speaker offset), as real verification scores are."""
    rng = np.random.default_rng(seed)
    spk = np.repeat(np.arange(speakers), per)
    offset = rng.normal(0, 0.7, speakers)[spk]
    targets = rng.random(len(spk)) < 0.3
    scores = rng.normal(size=len(spk)) + 2.0 * targets + offset * targets
    names = np.array([f"s{k}" for k in spk])
    genders = np.where(spk % 2 == 0, "f", "m")
    return Scores(scores, targets, genders, names, names)


def run(name, scores, replicates=300, seed=0, **params):
    cls = get_plugin_manager().get("metric", name)
    return cls(cls.Params(bootstrap=replicates, **params), PluginContext(seed=seed)).compute(
        MetricInputs(scores=scores)
    )


@pytest.mark.parametrize("name", ["eer-step", "eer-rocch", "min-dcf", "min-cllr", "cllr", "linkability"])
def test_interval_contains_estimate_and_shrinks_with_speakers(name):
    small = run(name, speaker_scores(16), p_target=[0.1]) if name == "min-dcf" else run(name, speaker_scores(16))
    large = run(name, speaker_scores(160), p_target=[0.1]) if name == "min-dcf" else run(name, speaker_scores(160))
    for r in small + large:
        assert r.ci_low is not None and r.ci_low <= r.value <= r.ci_high
        assert r.details["bootstrap"]["replicates"] == 300
    width = lambda rs: np.mean([r.ci_high - r.ci_low for r in rs if r.gender == "all"])  # noqa: E731
    assert width(large) < 0.6 * width(small)


def test_intervals_are_fixed_by_the_seed_and_avg_pairs_replicates():
    s = speaker_scores(30)
    first, again, other = run("eer-step", s, seed=3), run("eer-step", s, seed=3), run("eer-step", s, seed=4)
    assert [(r.ci_low, r.ci_high) for r in first] == [(r.ci_low, r.ci_high) for r in again]
    assert [(r.ci_low, r.ci_high) for r in first] != [(r.ci_low, r.ci_high) for r in other]
    avg = next(r for r in first if r.gender == "avg")
    f, m = (next(r for r in first if r.gender == g) for g in "fm")
    assert min(f.ci_low, m.ci_low) <= avg.ci_low and avg.ci_high <= max(f.ci_high, m.ci_high)


def test_zero_replicates_means_no_interval():
    results = run("eer-step", speaker_scores(10), replicates=0)
    assert all(r.ci_low is None and r.ci_high is None and "bootstrap" not in r.details for r in results)


def test_weights_resample_whole_speakers():
    speakers = np.repeat(["a", "b", "c", "d"], [3, 1, 2, 5])
    for w in speaker_weights(speakers, 50, np.random.default_rng(0)):
        for s in "abcd":
            assert len(set(w[speakers == s])) == 1  # a speaker's trials share one weight
        assert sum(w[speakers == s][0] for s in "abcd") == 4  # as many draws as speakers


def test_percentile_interval_needs_enough_valid_replicates():
    assert percentile_interval(np.array([np.nan] * 10 + [1.0]), 0.95) == (None, None)
    low, high = percentile_interval(np.arange(101.0), 0.9)
    assert (low, high) == pytest.approx((5.0, 95.0))
