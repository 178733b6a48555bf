"""per-speaker-eer against an independent EER (sklearn's roc_curve) per enrolled speaker, clipping, n/a speakers."""

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext
from vpeval.errors import MetricInputError
from vpeval.plugins import get_plugin_manager
from vpeval.types import Scores

metrics = pytest.importorskip("sklearn.metrics")


def metric(**params):
    cls = get_plugin_manager().get("metric", "per-speaker-eer")
    return cls(cls.Params(**{"bootstrap": 0, **params}), PluginContext(seed=2))


def reference_eer(scores, targets):
    """SpeechBrain's step EER from sklearn's ROC: FRR = share of targets <= t, FAR = share of non-targets > t
    at every distinct score t; the first t with the least |FAR - FRR| gives (FAR + FRR) / 2."""
    far, tpr, thresholds = metrics.roc_curve(targets, scores, drop_intermediate=False)
    # sklearn accepts score >= t; the step EER accepts score > t, the next-higher ROC point.
    values = np.sort(np.unique(scores))
    rates = {}
    for t, fa, tp in zip(thresholds, far, tpr, strict=True):
        rates[t] = (fa, 1 - tp)  # accept >= t
    fars, frrs = [], []
    for v in values:
        above = [t for t in thresholds if t > v]
        fa, fr = rates[min(above)] if above else (0.0, 1.0)
        fars.append(fa)
        frrs.append(fr)
    fars, frrs = np.array(fars), np.array(frrs)
    k = int(np.argmin(np.abs(fars - frrs)))
    return 100 * (fars[k] + frrs[k]) / 2


def random_trials(seed, speakers=12):
    rng = np.random.default_rng(seed)
    per = rng.integers(15, 40, size=speakers)
    enroll = np.repeat([f"spk{s:02d}" for s in range(speakers)], per)
    targets = rng.random(len(enroll)) < 0.3
    quality = rng.uniform(-1.0, 3.0, size=speakers)  # some speakers ranked the wrong way round
    quality[0] = -3.0  # one certainly is
    scores = rng.normal(targets * np.repeat(quality, per), 1.0)
    if seed % 2:
        scores = np.round(scores, 1)
    genders = np.repeat(np.where(np.arange(speakers) % 2, "m", "f"), per)
    return Scores(scores, targets, genders, enroll, enroll)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("clip", [False, True])
def test_each_speaker_matches_the_reference(seed, clip):
    scores = random_trials(seed)
    results = metric(clip=clip).compute(MetricInputs(scores=scores))
    by = {(r.metric, r.gender): r for r in results}
    assert [(r.metric, r.gender) for r in results][:2] == [("per-speaker-eer", "f"), ("per-speaker-eer-median", "f")]
    for gender in ("f", "m", "all"):
        mask = np.ones(len(scores), bool) if gender == "all" else scores.genders == gender
        expected = {}
        for s in np.unique(scores.enroll_speakers[mask]):
            rows = mask & (scores.enroll_speakers == s)
            t = scores.targets[rows]
            if t.all() or not t.any():
                continue
            eer = reference_eer(scores.scores[rows], t)
            expected[s] = min(eer, 50.0) if clip else eer
        per_speaker = by[("per-speaker-eer", gender)].details["per_speaker"]
        got = {s: v for s, v in per_speaker.items() if v is not None}
        assert got.keys() == expected.keys()
        for s in expected:
            assert got[s] == pytest.approx(expected[s], abs=1e-9)
        values = np.array(list(expected.values()))
        assert by[("per-speaker-eer", gender)].value == pytest.approx(values.mean())
        assert by[("per-speaker-eer-median", gender)].value == pytest.approx(np.median(values))
    assert by[("per-speaker-eer", "avg")].value == pytest.approx(
        (by[("per-speaker-eer", "f")].value + by[("per-speaker-eer", "m")].value) / 2
    )
    unclipped = metric().compute(MetricInputs(scores=scores))[0]
    if clip:
        assert by[("per-speaker-eer", "f")].value <= unclipped.value
    else:
        assert max(v or 0 for v in unclipped.details["per_speaker"].values()) > 50  # clipping matters here


def test_speakers_without_both_kinds_are_listed_and_left_out():
    s = random_trials(5)
    only_targets = s.enroll_speakers == "spk03"
    targets = np.where(only_targets, True, s.targets)
    result = metric().compute(MetricInputs(scores=Scores(s.scores, targets, None, s.enroll_speakers)))[0]
    assert result.details["skipped"]["speakers"] == ["spk03"]
    assert result.details["per_speaker"]["spk03"] is None and result.details["speakers"] == 11
    assert result.details["trials_per_speaker"]["nontargets"][0] == 0


def test_bootstrap_interval_and_missing_speakers():
    s = random_trials(1)
    result = metric(bootstrap=200).compute(MetricInputs(scores=s))[-2]
    assert result.gender == "all" and result.ci_low <= result.value <= result.ci_high
    with pytest.raises(MetricInputError, match="enrollment speaker"):
        metric().compute(MetricInputs(scores=Scores(s.scores, s.targets)))
    lonely = Scores(np.arange(6.0), np.array([True, False] * 3), None, np.array(list("abcdef")))
    with pytest.raises(MetricInputError, match="no enrolled speaker"):
        metric().compute(MetricInputs(scores=lonely))
