"""Attribute inference against independent computations: scikit-learn's balanced accuracy, a regression
fitted by hand on the same training-side arrays (fit_on: train), and scikit-learn's own cross-validation
(cross_val_predict over the same speaker folds) for the fold predictions (fit_on: evaluation)."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import PredefinedSplit, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval.plugins import plugin_context
from vpeval.testing.contracts import MetricContract
from vpeval.types import Corpus, Utterance
from vpeval_breakdown.attribute_inference import AttributeInference, balanced_accuracy, speaker_folds

ACCENTS = ("irish", "scottish", "welsh")
DATA = Path(__file__).parent / "data"  # spk2accent: s00..s29 and t00..t23, ACCENTS[k % 3], as _embeddings gives them


@pytest.mark.parametrize("seed", range(4))
def test_balanced_accuracy_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    truth = rng.choice(list("abcd"), size=200, p=[0.5, 0.3, 0.15, 0.05])
    predicted = np.where(rng.random(200) < 0.6, truth, rng.choice(list("abcd"), size=200))
    assert balanced_accuracy(truth, predicted) == pytest.approx(100 * balanced_accuracy_score(truth, predicted))
    weights = rng.integers(0, 3, size=200).astype(float)
    assert balanced_accuracy(truth, predicted, weights) == pytest.approx(
        100 * balanced_accuracy_score(truth, predicted, sample_weight=weights)
    )


def test_folds_are_speaker_disjoint_and_spread_every_class():
    rng = np.random.default_rng(0)
    speakers = np.repeat([f"s{k}" for k in range(20)], 3)
    labels = np.repeat(["a"] * 12 + ["b"] * 8, 3)
    fold = speaker_folds(speakers, labels, 4, rng)
    for s in set(speakers):
        assert len(set(fold[speakers == s])) == 1
    for c in "ab":
        counts = np.bincount(fold[labels == c] // 1, minlength=4) // 3
        assert counts.max() - counts.min() <= 1


def _embeddings(rng, speakers=30, utterances=4, dim=12, centre=None, prefix="s"):
    names = np.array([f"{prefix}{k:02d}" for k in range(speakers)])
    accent = {s: ACCENTS[k % 3] for k, s in enumerate(names)}
    centre = centre or {a: rng.normal(size=dim) * 1.5 for a in ACCENTS}
    voice = {s: centre[accent[s]] + rng.normal(size=dim) for s in names}
    spk = np.repeat(names, utterances)
    original = np.stack([voice[s] + 0.5 * rng.normal(size=dim) for s in spk])
    anonymized = rng.normal(size=original.shape) + 0.2 * original  # most of the cue removed
    return original, anonymized, spk, accent


def _training_side(rng, centre, dim=12, speakers=24, utterances=30):
    """Training speakers t00.. with the evaluation speakers' accent centres, as MetricInputs' train /
    embed_train (which counts the ids it is asked for)."""
    vectors, _, spk, accent = _embeddings(rng, speakers, utterances, dim, centre, prefix="t")
    ids = [f"{s}-{k}" for k, s in enumerate(spk)]
    train = Corpus("training", [Utterance(i, s, f"/nowhere/{i}.wav") for i, s in zip(ids, spk, strict=True)])
    row = {i: k for k, i in enumerate(ids)}
    asked: list[str] = []

    def embed(wanted):
        asked.extend(wanted)
        return vectors[[row[i] for i in wanted]]

    return train, embed, vectors, accent, asked


def _write(tmp_path, accent):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "spk2accent"
    path.write_text("".join(f"{s} {a}\n" for s, a in accent.items()))
    return str(path)


def _metric(tmp_path, accent, **params):
    p = AttributeInference.Params(attributes=["accent"], files={"accent": _write(tmp_path, accent)}, **params)
    return AttributeInference(p, plugin_context(seed=0, work_dir=tmp_path))


@pytest.mark.parametrize("seed", [0, 1])
def test_accuracy_matches_sklearn_cross_validation(tmp_path, seed):
    rng = np.random.default_rng(seed)
    original, anonymized, spk, accent = _embeddings(rng)
    rows = _metric(tmp_path, accent, bootstrap=0, fit_on="evaluation").compute(
        MetricInputs(recovered=anonymized, target=original, speakers=spk)
    )
    by = {r.metric: r for r in rows}
    labels = np.array([accent[s] for s in spk])
    fold = speaker_folds(
        spk, labels, 5, plugin_context(seed=0, work_dir=tmp_path / "r").rng("folds", "attribute-inference", "accent")
    )
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000))
    # original: sklearn's own cross-validation over the same folds
    orig_pred = cross_val_predict(model, original, labels, cv=PredefinedSplit(fold))
    assert by["attribute-bacc-original"].value == pytest.approx(100 * balanced_accuracy_score(labels, orig_pred))
    # anonymized: fitted on the other folds' original embeddings, applied to the fold's anonymized ones
    anon_pred = np.empty(len(labels), dtype=object)
    for k in range(5):
        test = fold == k
        anon_pred[test] = model.fit(original[~test], labels[~test]).predict(anonymized[test])
    assert by["attribute-bacc"].value == pytest.approx(100 * balanced_accuracy_score(labels, anon_pred))
    assert by["attribute-bacc"].details["chance"] == pytest.approx(100 / 3)
    assert by["attribute-bacc-original"].value > 80 > 55 > by["attribute-bacc"].value


def test_intervals_and_too_few_speakers(tmp_path):
    rng = np.random.default_rng(2)
    original, anonymized, spk, accent = _embeddings(rng)
    rows = _metric(tmp_path, accent, bootstrap=100, fit_on="evaluation").compute(
        MetricInputs(recovered=anonymized, target=original, speakers=spk)
    )
    assert all(r.ci_low <= r.value <= r.ci_high for r in rows)
    few = {s: a for s, a in accent.items()}
    few.update({s: "manx" for s in list(accent)[:3]})  # a class of three speakers
    rows = _metric(tmp_path / "b", few, bootstrap=0, fit_on="evaluation").compute(
        MetricInputs(recovered=anonymized, target=original, speakers=spk)
    )
    assert all(np.isnan(r.value) for r in rows) and "manx (3 speakers)" in rows[0].details["reason"]


def test_without_embeddings_it_says_how_to_get_them(tmp_path):
    with pytest.raises(MetricInputError, match="embedding-view"):
        _metric(tmp_path, {"s": "a"}).compute(MetricInputs())


def test_fit_on_train_without_a_training_side_says_what_to_set(tmp_path):
    original, anonymized, spk, accent = _embeddings(np.random.default_rng(0))
    with pytest.raises(MetricInputError, match="fit_on: evaluation"):
        _metric(tmp_path, accent).compute(MetricInputs(recovered=anonymized, target=original, speakers=spk))


@pytest.mark.parametrize("seed", [0, 1])
def test_fit_on_train_matches_a_regression_fitted_on_the_same_training_arrays(tmp_path, seed):
    rng = np.random.default_rng(seed)
    centre = {a: rng.normal(size=12) * 1.5 for a in ACCENTS}
    original, anonymized, spk, accent = _embeddings(rng, centre=centre)
    train, embed, vectors, train_accent, asked = _training_side(rng, centre)
    metric = _metric(tmp_path, {**accent, **train_accent}, bootstrap=0, train_utterances=7)
    rows = metric.compute(
        MetricInputs(recovered=anonymized, target=original, speakers=spk, train=train, embed_train=embed)
    )
    by = {r.metric: r for r in rows}
    # the training side: 7 of each training speaker's 30 utterances, asked for once, nothing of the evaluation
    picked = list(asked)
    assert len(picked) == len(set(picked)) == 24 * 7
    assert {i.split("-")[0] for i in picked} == set(train_accent)
    row = {u.id: k for k, u in enumerate(train.utterances)}
    x = vectors[[row[i] for i in picked]]
    y = np.array([train_accent[i.split("-")[0]] for i in picked])
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000))
    model.fit(x, y)
    labels = np.array([accent[s] for s in spk])
    assert by["attribute-bacc"].value == pytest.approx(100 * balanced_accuracy_score(labels, model.predict(anonymized)))
    assert by["attribute-bacc-original"].value == pytest.approx(
        100 * balanced_accuracy_score(labels, model.predict(original))
    )
    assert by["attribute-bacc-original"].value > 80 > by["attribute-bacc"].value
    details = by["attribute-bacc"].details
    assert details["train_speakers_per_class"] == {a: 8 for a in ACCENTS} and details["train_utterances"] == 24 * 7
    assert details["chance"] == pytest.approx(100 / 3) and "training speech" in details["fit_on"]
    # the same seed chooses the same utterances
    again = _metric(tmp_path / "again", {**accent, **train_accent}, bootstrap=0, train_utterances=7)
    asked.clear()
    again.compute(MetricInputs(recovered=anonymized, target=original, speakers=spk, train=train, embed_train=embed))
    assert asked == picked


def test_fit_on_train_refuses_a_training_side_with_too_few_speakers_per_class(tmp_path):
    rng = np.random.default_rng(3)
    centre = {a: rng.normal(size=12) for a in ACCENTS}
    original, anonymized, spk, accent = _embeddings(rng, centre=centre)
    train, embed, _, train_accent, asked = _training_side(rng, centre, speakers=9)  # 3 speakers per class
    rows = _metric(tmp_path, {**accent, **train_accent}, bootstrap=0).compute(
        MetricInputs(recovered=anonymized, target=original, speakers=spk, train=train, embed_train=embed)
    )
    assert all(np.isnan(r.value) for r in rows) and "fewer speakers than min_speakers 5" in rows[0].details["reason"]
    assert not asked  # no embedding computed for a figure that is not given


class TestAttributeInferenceContract(MetricContract):
    plugin_name = "attribute-inference"

    params = {"attributes": ["accent"], "files": {"accent": str(DATA / "spk2accent")}, "bootstrap": 20}

    def inputs(self):
        rng = np.random.default_rng(0)
        centre = {a: rng.normal(size=12) for a in ACCENTS}
        original, anonymized, spk, _ = _embeddings(rng, centre=centre)
        train, embed, *_ = _training_side(rng, centre)
        return MetricInputs(recovered=anonymized, target=original, speakers=spk, train=train, embed_train=embed)
