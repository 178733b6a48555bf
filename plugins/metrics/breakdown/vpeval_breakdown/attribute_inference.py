"""Attribute inference from an attacker's embeddings: can a classifier tell a speaker's attribute (gender,
age band, accent, ...) from the attacker's embedding of anonymized speech, and how much better than chance
and how much worse than from original speech?

Needs "embeddings": per utterance of the evaluation speech, the attacker's embedding of the observed speech
(original for protocol O, anonymized for protocol A) and of the same utterance's original speech, with its
speaker (any attacker through the `embedding-view` attacker). The evaluation speakers are dealt into
`folds` speaker-disjoint folds, stratified by class; for each fold a logistic regression (balanced class
weights, standardised inputs) is fitted on the ORIGINAL-speech embeddings of the other folds' speakers and
predicts the fold's utterances from their observed and from their original embeddings. Balanced accuracy
(the mean over classes of the recall, %) over all predictions; chance is 100 / classes.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval.stats import percentile_interval, speaker_weights
from vpeval.types import MetricResult
from vpeval_breakdown.by_attribute import AttributeMetric, AttributeParams


def balanced_accuracy(truth: np.ndarray, predicted: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Mean over the classes present in `truth` of the (weighted) share predicted right, %."""
    w = np.ones(len(truth)) if weights is None else weights
    recalls = []
    for c in np.unique(truth):
        mine = truth == c
        if w[mine].sum() > 0:
            recalls.append((w[mine] @ (predicted[mine] == c)) / w[mine].sum())
    return 100.0 * float(np.mean(recalls)) if recalls else float("nan")


def speaker_folds(speakers: np.ndarray, labels: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold index per utterance: each class's speakers shuffled and dealt round-robin, so folds are
    speaker-disjoint and every class is spread over them."""
    speaker_label = dict(zip(speakers.tolist(), labels.tolist(), strict=True))
    fold_of: dict[str, int] = {}
    start = 0
    for c in sorted(set(labels.tolist())):
        members = sorted(s for s, value in speaker_label.items() if value == c)
        for k, s in enumerate(rng.permutation(members)):
            fold_of[str(s)] = (start + k) % folds
        start += len(members)  # the next class starts where this one stopped: folds stay even
    return np.array([fold_of[s] for s in speakers.tolist()])


class AttributeInferenceParams(AttributeParams):
    folds: int = Field(5, ge=2, le=50, description="Speaker-disjoint folds of the evaluation speakers.")
    regularization: float = Field(1.0, gt=0.0, description="Inverse L2 strength C of the logistic regression.")
    bootstrap: int = Field(200, ge=0, le=20_000, description="Speaker-level bootstrap replicates; 0 disables.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Coverage of the percentile interval.")


class AttributeInference(AttributeMetric):
    """Balanced accuracy (%) of each speaker attribute inferred from the attacker's embeddings."""

    name = "attribute-inference"
    needs: ClassVar[str] = "embeddings"
    result_metrics = ("attribute-bacc", "attribute-bacc-original")
    Params = AttributeInferenceParams

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        if inputs.recovered is None or inputs.target is None or inputs.speakers is None:
            raise MetricInputError(
                f"Metric {self.name} needs per-utterance embeddings with speakers; list the attacker through "
                "the embedding-view attacker (use: embedding-view, params: {use: <attacker>})."
            )
        observed, original = np.asarray(inputs.recovered, float), np.asarray(inputs.target, float)
        speakers = np.asarray(inputs.speakers).astype(str)
        out: list[MetricResult] = []
        for attribute, values in self._attributes(None).items():
            out += self._attribute(attribute, values, observed, original, speakers)
        return out

    def _attribute(self, attribute, values, observed, original, speakers) -> list[MetricResult]:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        labels = np.array([values.get(s, "") for s in speakers])
        known = labels != ""
        obs, orig, spk, y = observed[known], original[known], speakers[known], labels[known]
        per_class = {c: len(set(spk[y == c])) for c in sorted(set(y))}
        info = {
            "attribute": attribute,
            "class": attribute,
            "variant": attribute,  # report.md's privacy tables: one table per attribute
            "speakers_per_class": per_class,
            "speakers_unlabelled": len(set(speakers[~known])),
            "folds": self.params.folds,
            "fit_on": "original speech of the other folds' speakers",
        }
        small = {c: n for c, n in per_class.items() if n < max(self.params.min_speakers, self.params.folds)}
        if len(per_class) < 2 or small:
            reason = (
                f"{attribute} has {len(per_class)} class(es) among the evaluation speakers"
                if len(per_class) < 2
                else f"{attribute} classes {', '.join(f'{c} ({n} speakers)' for c, n in small.items())} have fewer "
                f"speakers than max(min_speakers, folds) = {max(self.params.min_speakers, self.params.folds)}"
            )
            return [
                MetricResult(n, float("nan"), "all", unit="%", details={**info, "reason": reason})
                for n in self.result_metrics
            ]
        fold = speaker_folds(spk, y, self.params.folds, self.context.rng("folds", self.name, attribute))
        predicted_obs, predicted_orig = np.empty(len(y), dtype=object), np.empty(len(y), dtype=object)
        for k in range(self.params.folds):
            test = fold == k
            model = make_pipeline(
                StandardScaler(),
                LogisticRegression(C=self.params.regularization, class_weight="balanced", max_iter=2000),
            )
            model.fit(orig[~test], y[~test])
            predicted_obs[test] = model.predict(obs[test])
            predicted_orig[test] = model.predict(orig[test])
        chance = 100.0 / len(per_class)
        results = []
        for name, predicted in (("attribute-bacc", predicted_obs), ("attribute-bacc-original", predicted_orig)):
            value = balanced_accuracy(y, predicted)
            low = high = None
            if self.params.bootstrap:
                rng = self.context.rng("bootstrap", name, attribute)
                reps = [balanced_accuracy(y, predicted, w) for w in speaker_weights(spk, self.params.bootstrap, rng)]
                low, high = percentile_interval(np.array(reps), self.params.confidence)
            results.append(
                MetricResult(name, value, "all", low, high, "%", {**info, "chance": chance, "classes": len(per_class)})
            )
        return results
