"""The score metric plugins: per-gender results and the VPAC average, units, degenerate inputs."""

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext
from vpeval.errors import MetricInputError
from vpeval.plugins import get_plugin_manager
from vpeval.types import Scores
from vpeval_scoring.eer import step_eer
from vpeval_scoring.sorted_trials import SortedTrials

SCORE_METRICS = ["eer-step", "eer-rocch", "eer", "min-dcf", "cllr", "min-cllr", "linkability", "zebra"]


def metric(name, **params):
    cls = get_plugin_manager().get("metric", name)
    return cls(cls.Params(**{"bootstrap": 0, **params}), PluginContext(seed=1))


def gendered_scores(seed=0, speakers=30, per=60):
    rng = np.random.default_rng(seed)
    spk = np.repeat(np.arange(speakers), per)
    gender = np.where(spk % 2 == 0, "f", "m")
    targets = rng.random(len(spk)) < 0.3
    separation = np.where(gender == "f", 1.0, 2.5)  # male trials easier, as in VPC
    scores = rng.normal(size=len(spk)) + separation * targets
    names = np.array([f"spk{s}" for s in spk])
    return Scores(scores, targets, gender, names, names)


def test_every_score_metric_is_registered():
    names = get_plugin_manager().names("metric")
    for name in SCORE_METRICS + ["gvd", "de-id", "inversion"]:
        assert name in names


def test_per_gender_avg_and_pooled():
    scores = gendered_scores()
    results = metric("eer-step").compute(MetricInputs(scores=scores))
    by = {r.gender: r for r in results}
    assert [r.gender for r in results] == ["f", "m", "avg", "all"]
    for g in ("f", "m"):
        mask = scores.genders == g
        expected = 100 * step_eer(SortedTrials(scores.scores[mask], scores.targets[mask]).tally()).eer
        assert by[g].value == pytest.approx(expected)
    assert by["avg"].value == pytest.approx((by["f"].value + by["m"].value) / 2)
    assert by["all"].value == pytest.approx(100 * step_eer(SortedTrials(scores.scores, scores.targets).tally()).eer)
    assert by["f"].value > by["m"].value
    assert all(r.unit == "%" for r in results)


def test_without_genders_only_pooled():
    s = gendered_scores()
    results = metric("min-cllr").compute(MetricInputs(scores=Scores(s.scores, s.targets)))
    assert [r.gender for r in results] == ["all"] and results[0].unit == "bits"
    blank = Scores(s.scores, s.targets, np.array([""] * len(s)))  # what the runner passes without labels
    assert [r.gender for r in metric("cllr").compute(MetricInputs(scores=blank))] == ["all"]


def test_min_dcf_one_result_per_prior_and_eer_variants():
    s = gendered_scores()
    results = metric("min-dcf", p_target=[0.01, 0.001, 0.1]).compute(MetricInputs(scores=s))
    assert [(r.gender, r.details["p_target"]) for r in results][:3] == [("f", 0.01), ("f", 0.001), ("f", 0.1)]
    assert {r.details["p_target"] for r in results if r.gender == "avg"} == {0.01, 0.001, 0.1}
    assert all(0 <= r.value <= 1 for r in results)
    step = metric("eer").compute(MetricInputs(scores=s))
    rocch = metric("eer", variant="rocch").compute(MetricInputs(scores=s))
    assert [r.value for r in step] == [r.value for r in metric("eer-step").compute(MetricInputs(scores=s))]
    assert [r.value for r in rocch] == [r.value for r in metric("eer-rocch").compute(MetricInputs(scores=s))]
    assert rocch[0].details["variant"] == "rocch"


def test_zebra_reports_population_and_worst_case():
    results = metric("zebra").compute(MetricInputs(scores=gendered_scores()))
    names = {r.metric for r in results}
    assert names == {"zebra-dece", "zebra-worst-case"}
    worst = [r for r in results if r.metric == "zebra-worst-case" and r.gender == "all"][0]
    assert worst.details["tag"] in "0ABCDEF" and worst.unit == "log10 LR"


def degenerate_cases():
    rng = np.random.default_rng(0)
    s = rng.normal(size=20)
    t = np.arange(20) % 2 == 0
    nan = s.copy()
    nan[3] = np.nan
    inf = s.copy()
    inf[4] = np.inf
    return {
        "empty": (Scores(np.zeros(0), np.zeros(0, bool)), "no scores"),
        "targets only": (Scores(s, np.ones(20, bool)), "no non-target"),
        "non-targets only": (Scores(s, np.zeros(20, bool)), "no target"),
        "all equal": (Scores(np.full(20, 0.5), t), "all 20 scores"),
        "nan": (Scores(nan, t), "NaN or infinite"),
        "inf": (Scores(inf, t), "NaN or infinite"),
    }


@pytest.mark.parametrize("name", SCORE_METRICS)
@pytest.mark.parametrize("case", list(degenerate_cases()))
def test_degenerate_input_is_one_clear_sentence(name, case):
    scores, fragment = degenerate_cases()[case]
    with pytest.raises(MetricInputError, match=fragment) as info:
        metric(name).compute(MetricInputs(scores=scores))
    message = str(info.value)
    assert name in message and message.count(". ") == 0 and "\n" not in message


def test_degenerate_gender_subset_is_named():
    s = gendered_scores()
    targets = s.targets.copy()
    targets[s.genders == "m"] = False
    with pytest.raises(MetricInputError, match="the m trials"):
        metric("eer-step").compute(MetricInputs(scores=Scores(s.scores, targets, s.genders)))


def test_no_scores_at_all():
    with pytest.raises(MetricInputError, match="needs verification scores"):
        metric("cllr").compute(MetricInputs())
