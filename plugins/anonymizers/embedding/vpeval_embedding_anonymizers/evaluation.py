"""Evaluation in speaker-embedding space, in the layout of seed 003's Table 6.

For each system (original vectors, + OHNN, + OHNN + EC, ...): ASV EER of cosine scoring on the
vectors themselves, O-A (original enrollment against anonymized test; O-O for the original row) and
A-A (anonymized against anonymized), and the UAR of an emotion classifier trained on that system's
vectors: two fully connected layers (D -> 128 -> emotions, softmax cross-entropy) on an 85 / 15
split, reported after the first epoch and after training with early stopping, as in section 5.

The paper splits utterances at random, so the classifier has seen every test speaker and can learn
each speaker's own emotion sub-clusters (its Fig. 4a); split="speaker" holds out whole speakers
instead, as VoicePrivacy's speaker-independent emotion evaluator does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval.stats import equal_error_rate as eer


def pairwise_eer(enroll: np.ndarray, test: np.ndarray, speakers: np.ndarray) -> float:
    """EER of cosine scores between every enroll row and every test row of another utterance."""

    def unit(x):
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)

    scores = unit(enroll) @ unit(test).T
    same = speakers[:, None] == speakers[None, :]
    other_utt = ~np.eye(len(speakers), dtype=bool)
    return eer(scores[same & other_utt], scores[~same])


def split_rows(emotions: np.ndarray, speakers: np.ndarray | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, development) row indices, 85 / 15: stratified by emotion, or by whole speakers."""
    from sklearn.model_selection import GroupShuffleSplit, train_test_split

    rows = np.arange(len(emotions))
    if speakers is None:
        return train_test_split(rows, test_size=0.15, stratify=emotions, random_state=seed)
    if len(np.unique(speakers)) < 3:
        raise ValueError("a speaker-disjoint emotion split needs at least 3 speakers")
    splitter = GroupShuffleSplit(n_splits=1, test_size=0.15, random_state=seed)
    return next(splitter.split(rows, groups=speakers))


def emotion_uar(
    vectors: np.ndarray,
    emotions: np.ndarray,
    seed: int = 0,
    patience: int = 10,
    max_epochs: int = 300,
    speakers: np.ndarray | None = None,
) -> tuple[float, float]:
    """(first-epoch UAR, final UAR) of a D -> 128 -> E classifier on an 85 / 15 split.

    As in seed 003 section 5: trained epoch by epoch, stopped when the development loss has not
    improved for `patience` epochs; UAR is measured on the development part. With `speakers`, the
    development part holds whole speakers the classifier never saw.
    """
    from sklearn.metrics import balanced_accuracy_score, log_loss
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import StandardScaler

    train, dev = split_rows(emotions, speakers, seed)
    x_tr, x_dev, y_tr, y_dev = vectors[train], vectors[dev], emotions[train], emotions[dev]
    scaler = StandardScaler().fit(x_tr)
    x_tr, x_dev = scaler.transform(x_tr), scaler.transform(x_dev)
    classes = np.unique(emotions)
    model = MLPClassifier(hidden_layer_sizes=(128,), random_state=seed)
    best, since_best, first = np.inf, 0, None
    for _ in range(max_epochs):
        model.partial_fit(x_tr, y_tr, classes=classes)
        uar = float(balanced_accuracy_score(y_dev, model.predict(x_dev)))
        first = uar if first is None else first
        loss = log_loss(y_dev, model.predict_proba(x_dev), labels=classes)
        if loss < best - 1e-4:
            best, since_best = loss, 0
        else:
            since_best += 1
            if since_best >= patience:
                break
    return first, uar


@dataclass
class Row:
    system: str
    eer_oa: float  # O-O for the original row
    eer_aa: float
    uar_first: float
    uar_final: float


def mean_uar(
    vectors: np.ndarray, emotions: np.ndarray, seed: int, repeats: int, speakers: np.ndarray | None = None
) -> tuple[float, float]:
    """emotion_uar averaged over `repeats` random 85 / 15 splits (one split, as in the paper, is noisy)."""
    runs = np.array([emotion_uar(vectors, emotions, seed + r, speakers=speakers) for r in range(repeats)])
    return float(runs[:, 0].mean()), float(runs[:, 1].mean())


def embedding_space_table(
    original: np.ndarray,
    speakers: np.ndarray,
    emotions: np.ndarray,
    systems: dict[str, np.ndarray],
    seed: int = 0,
    repeats: int = 1,
    split: str = "utterance",
) -> list[Row]:
    """Rows for 'original' and each anonymized system (vectors in the same row order as original)."""
    speakers, emotions = np.asarray(speakers), np.asarray(emotions)
    groups = speakers if split == "speaker" else None
    oo = pairwise_eer(original, original, speakers)
    rows = [Row("original", oo, oo, *mean_uar(original, emotions, seed, repeats, groups))]
    for name, vectors in systems.items():
        rows.append(
            Row(
                name,
                pairwise_eer(original, vectors, speakers),
                pairwise_eer(vectors, vectors, speakers),
                *mean_uar(vectors, emotions, seed, repeats, groups),
            )
        )
    return rows


def format_table(rows: list[Row]) -> str:
    """Plain-text table: EER O-A / A-A and UAR first / final epoch, in percent."""
    lines = [f"{'speaker embeddings':24s} {'EER O-A':>8s} {'EER A-A':>8s} {'UAR first':>10s} {'UAR final':>10s}"]
    for r in rows:
        lines.append(
            f"{r.system:24s} {100 * r.eer_oa:8.2f} {100 * r.eer_aa:8.2f} "
            f"{100 * r.uar_first:10.2f} {100 * r.uar_final:10.2f}"
        )
    return "\n".join(lines)
