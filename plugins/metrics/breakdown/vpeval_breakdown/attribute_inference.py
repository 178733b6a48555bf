"""Attribute inference from an attacker's embeddings: can a classifier tell a speaker's attribute (gender,
age band, accent, ...) from the attacker's embedding of anonymized speech, and how much better than chance
and how much worse than from original speech?

Needs "embeddings": per utterance of the evaluation speech, the attacker's embedding of the observed speech
(original for protocol O, anonymized for protocol A) and of the same utterance's original speech, with its
speaker (any attacker through the `embedding-view` attacker); and the training side (the speech the attacker
trained on and its embeddings of it), which the core hands to metrics that set `reads_training_side`.

`fit_on: train` (the default): one logistic regression (balanced class weights, standardised inputs) is
fitted on the attacker's embeddings of up to `train_utterances` seeded utterances per training speaker, and
predicts every evaluation utterance from its observed and from its original embedding.
`fit_on: evaluation`: the evaluation speakers are dealt into `folds` speaker-disjoint folds, stratified by
class; each fold is predicted by a regression fitted on the ORIGINAL-speech embeddings of the other folds.
Balanced accuracy (the mean over classes of the recall, %) over all predictions; chance is 100 / classes.
"""

from __future__ import annotations

from typing import ClassVar, Literal

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
    fit_on: Literal["train", "evaluation"] = Field(
        "train",
        description="Fit on the attacker's embeddings of its training speech (train) or, in speaker-disjoint folds, "
        "on the evaluation speakers' original speech (evaluation).",
    )
    train_utterances: int = Field(
        20,
        ge=1,
        le=100_000,
        description="fit_on train: at most this many utterances per training speaker (seeded choice).",
    )
    folds: int = Field(5, ge=2, le=50, description="Speaker-disjoint folds of the evaluation speakers.")
    regularization: float = Field(1.0, gt=0.0, le=1e6, description="Inverse L2 strength C of the logistic regression.")
    bootstrap: int = Field(200, ge=0, le=20_000, description="Speaker-level bootstrap replicates; 0 disables.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Coverage of the percentile interval.")


class AttributeInference(AttributeMetric):
    """Balanced accuracy (%) of each speaker attribute inferred from the attacker's embeddings."""

    name = "attribute-inference"
    needs: ClassVar[str] = "embeddings"
    result_metrics = ("attribute-bacc", "attribute-bacc-original")
    Params = AttributeInferenceParams
    reads_training_side: ClassVar[bool] = True

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        if inputs.recovered is None or inputs.target is None or inputs.speakers is None:
            raise MetricInputError(
                f"Metric {self.name} needs per-utterance embeddings with speakers; list the attacker through "
                "the embedding-view attacker (use: embedding-view, params: {use: <attacker>})."
            )
        observed, original = np.asarray(inputs.recovered, float), np.asarray(inputs.target, float)
        speakers = np.asarray(inputs.speakers).astype(str)
        if self.params.fit_on == "train" and (inputs.train is None or inputs.embed_train is None):
            raise MetricInputError(
                f"Metric {self.name} with fit_on: train needs the attacker's training side, which this run does not "
                "give; set fit_on: evaluation to fit on the evaluation speakers instead."
            )
        out: list[MetricResult] = []
        for attribute, values in self._attributes(None).items():
            if self.params.fit_on == "train":
                out += self._from_training_side(attribute, values, observed, original, speakers, inputs)
            else:
                out += self._from_folds(attribute, values, observed, original, speakers)
        return out

    def _from_training_side(self, attribute, values, observed, original, speakers, inputs) -> list[MetricResult]:
        """Fitted once on the training speakers' embeddings; every evaluation utterance predicted."""
        chosen = self._training_utterances(inputs.train, values, attribute)
        y_train = np.array([values[u.speaker] for u in chosen])
        per_class = {c: len({u.speaker for u in chosen if values[u.speaker] == c}) for c in sorted(set(y_train))}
        labels = np.array([values.get(s, "") for s in speakers])
        known = np.isin(labels, list(per_class))  # unlabelled, or a class the training side lacks: counted, left out
        info = {
            "attribute": attribute,
            "class": attribute,
            "variant": attribute,  # report.md's privacy tables: one table per attribute
            "train_speakers_per_class": per_class,
            "train_utterances": len(chosen),
            "speakers_per_class": {c: len(set(speakers[labels == c])) for c in per_class},
            "speakers_unlabelled": len(set(speakers[labels == ""])),
            "speakers_in_classes_not_trained": len(set(speakers[(labels != "") & ~known])),
            "fit_on": "the attacker's embeddings of its training speech",
        }
        small = {c: n for c, n in per_class.items() if n < self.params.min_speakers}
        if len(per_class) < 2 or small or not known.any():
            reason = (
                f"{attribute} has {len(per_class)} class(es) among the training speakers"
                if len(per_class) < 2
                else f"{attribute} training classes {', '.join(f'{c} ({n} speakers)' for c, n in small.items())} have "
                f"fewer speakers than min_speakers {self.params.min_speakers}"
                if small
                else f"no evaluation speaker has a {attribute} the training side has"
            )
            return [
                MetricResult(n, float("nan"), "all", unit="%", details={**info, "reason": reason})
                for n in self.result_metrics
            ]
        model = self._classifier().fit(np.asarray(inputs.embed_train([u.id for u in chosen]), float), y_train)
        predictions = {
            "attribute-bacc": model.predict(observed[known]),
            "attribute-bacc-original": model.predict(original[known]),
        }
        return self._results(attribute, labels[known], speakers[known], predictions, len(per_class), info)

    def _training_utterances(self, train, values, attribute) -> list:
        """Up to `train_utterances` utterances of each labelled training speaker, chosen by the seed."""
        by_speaker: dict[str, list] = {}
        for u in train.utterances:
            if values.get(u.speaker, ""):
                by_speaker.setdefault(u.speaker, []).append(u)
        rng = self.context.rng("train-utterances", self.name, attribute)
        chosen = []
        for spk in sorted(by_speaker):
            utts = by_speaker[spk]
            keep = min(len(utts), self.params.train_utterances)
            chosen += [utts[k] for k in sorted(rng.choice(len(utts), size=keep, replace=False))]
        return chosen

    def _classifier(self):
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        return make_pipeline(
            StandardScaler(), LogisticRegression(C=self.params.regularization, class_weight="balanced", max_iter=2000)
        )

    def _results(self, attribute, y, spk, predictions, classes, info) -> list[MetricResult]:
        """Balanced accuracy of each prediction set, with a speaker-level bootstrap interval."""
        results = []
        for name, predicted in predictions.items():
            value = balanced_accuracy(y, predicted)
            low = high = None
            if self.params.bootstrap:
                rng = self.context.rng("bootstrap", name, attribute)
                reps = [balanced_accuracy(y, predicted, w) for w in speaker_weights(spk, self.params.bootstrap, rng)]
                low, high = percentile_interval(np.array(reps), self.params.confidence)
            details = {**info, "chance": 100.0 / classes, "classes": classes}
            results.append(MetricResult(name, value, "all", low, high, "%", details))
        return results

    def _from_folds(self, attribute, values, observed, original, speakers) -> list[MetricResult]:
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
            model = self._classifier().fit(orig[~test], y[~test])
            predicted_obs[test] = model.predict(obs[test])
            predicted_orig[test] = model.predict(orig[test])
        predictions = {"attribute-bacc": predicted_obs, "attribute-bacc-original": predicted_orig}
        return self._results(attribute, y, spk, predictions, len(per_class), info)
