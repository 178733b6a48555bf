"""The emotion evaluator behind UAR: acoustic functionals and a linear classifier, trained per fold.

No packaged speech-emotion model exists for vpeval (VoicePrivacy 2024 uses a wav2vec2 SER fine-tuned on
IEMOCAP), so the evaluator is trained on the original evaluation speech itself, with speaker-independent
folds: each fold's model never sees the speakers it is tested on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def make_classifier(kind: str, regularization: float, seed: int):
    """A standardised linear classifier; classes are weighted inversely to frequency, as UAR weighs them."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic-regression":
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=regularization, class_weight="balanced", max_iter=2000)
    else:
        from sklearn.svm import LinearSVC

        model = LinearSVC(C=regularization, class_weight="balanced", max_iter=20000, random_state=seed)
    return make_pipeline(StandardScaler(), model)


def speaker_folds(speakers: np.ndarray, folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train rows, test rows) per fold; GroupKFold balances fold sizes and is deterministic."""
    from sklearn.model_selection import GroupKFold

    splits = min(folds, len(np.unique(speakers)))
    rows = np.zeros((len(speakers), 1))
    return list(GroupKFold(n_splits=splits).split(rows, groups=speakers))


def class_recalls(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    """Recall of every class present in `truth` (share of its utterances predicted as it)."""
    return {label: float(np.mean(predicted[truth == label] == label)) for label in np.unique(truth)}


@dataclass
class FoldOutcome:
    """Recalls of one fold's model on its held-out speakers, original and anonymized, and the
    predictions behind them (rows index the labelled utterances), for the bootstrap."""

    speakers: list[str]
    original: dict[str, float]
    anonymized: dict[str, float] | None
    original_rows: np.ndarray | None = None
    original_predicted: np.ndarray | None = None
    anonymized_rows: np.ndarray | None = None
    anonymized_predicted: np.ndarray | None = None


def weighted_fold_uar(folds: list[tuple[np.ndarray, np.ndarray]], truth: np.ndarray, weights: np.ndarray) -> float:
    """Mean over folds of the weighted macro recall (classes with weight only); NaN if no fold has any."""
    values = []
    for rows, predicted in folds:
        w, y = weights[rows], truth[rows]
        recalls = []
        for label in np.unique(y):
            mass = w[y == label].sum()
            if mass > 0:
                recalls.append(w[(y == label) & (predicted == label)].sum() / mass)
        if recalls:
            values.append(np.mean(recalls))
    return float(np.mean(values)) if values else float("nan")


def normalise_per_speaker(features: np.ndarray, speakers: np.ndarray) -> np.ndarray:
    """Z-score each feature within each speaker (a common SER step that removes speaker offsets)."""
    out = np.empty_like(features)
    for speaker in np.unique(speakers):
        rows = speakers == speaker
        block = features[rows]
        out[rows] = (block - block.mean(0)) / np.maximum(block.std(0), 1e-8)
    return out
