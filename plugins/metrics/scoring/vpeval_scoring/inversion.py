"""Speaker-inversion metrics (seed 002, equations 14-15): how close recovered embeddings come to the
true ones, and how well they verify as the true speakers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval_scoring.sorted_trials import Tally


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows divided by their norms (zero rows stay zero). Each row is first scaled by the power of two
    that brings its largest |entry| into [0.5, 1): exact, so the result is unchanged, and the norm of
    entries near 1e308 no longer overflows (nor that of entries near 1e-308 underflows)."""
    x = np.asarray(x, dtype=np.float64)
    top = np.max(np.abs(x), axis=1, keepdims=True) if x.size else np.ones((len(x), 1))
    x = np.ldexp(x, -np.frexp(top)[1])
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def cos_sim(recovered: np.ndarray, target: np.ndarray) -> float:
    """Eq. 14: mean cosine similarity between each recovered embedding and its target."""
    return float(np.mean(np.einsum("ij,ij->i", unit_rows(recovered), unit_rows(target))))


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.asarray(x, dtype=np.float64)
    z = np.exp(z - z.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def kl_divergence(recovered: np.ndarray, target: np.ndarray, epsilon: float) -> float:
    """Eq. 15: mean over rows of sum_k P log((P + eps) / (P_hat + eps)), P = softmax(target),
    P_hat = softmax(recovered), in nats."""
    p, q = softmax(target), softmax(recovered)
    return float(np.mean(np.sum(p * np.log((p + epsilon) / (q + epsilon)), axis=1)))


def verification_trials(
    recovered: np.ndarray, target: np.ndarray, speakers: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Every recovered embedding against the target embedding of every OTHER utterance: cosine scores and
    same-speaker labels.

    Row i of both arrays is one utterance, so the pair (i, i) would compare an utterance with itself (a
    trivial target trial); seed 002's verification pairs never do, so the diagonal is left out.
    """
    scores = unit_rows(recovered) @ unit_rows(target).T
    speakers = np.asarray(speakers).astype(str)
    same = speakers[:, None] == speakers[None, :]
    others = ~np.eye(len(speakers), dtype=bool)
    return scores[others], same[others]


def pair_trials(
    recovered: np.ndarray, target: np.ndarray, speakers: np.ndarray, pairs: np.ndarray, chunk: int = 65536
) -> tuple[np.ndarray, np.ndarray]:
    """Cosine scores and same-speaker labels of the given (recovered row, target row) pairs [P, 2] (a trial
    list, or a sample of all pairs when they are too many), computed in chunks of rows."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    rec, tgt = unit_rows(recovered), unit_rows(target)
    speakers = np.asarray(speakers).astype(str)
    scores = np.concatenate(
        [
            np.einsum("ij,ij->i", rec[p[:, 0]], tgt[p[:, 1]])
            for p in np.array_split(pairs, max(1, -(-len(pairs) // chunk)))
        ]
    )
    return scores, speakers[pairs[:, 0]] == speakers[pairs[:, 1]]


@dataclass(frozen=True)
class Accuracy:
    value: float  # fraction
    threshold: float  # same speaker when cosine > threshold


def best_accuracy(tally: Tally, balanced: bool = True) -> Accuracy:
    """Accuracy at the cosine threshold that maximises it (the paper's Acc. and threshold).

    balanced: mean of the target and non-target accuracies, so the many different-speaker pairs do not
    swamp the few same-speaker ones; otherwise the share of correct pairs.
    """
    tar, non = tally.tar, tally.non
    n_tar, n_non = tar.sum(), non.sum()
    correct_tar = n_tar - np.concatenate([[0], np.cumsum(tar)])  # accepted targets: score > t
    correct_non = np.concatenate([[0], np.cumsum(non)])  # rejected non-targets: score <= t
    if balanced:
        acc = 0.5 * (correct_tar / n_tar + correct_non / n_non)
    else:
        acc = (correct_tar + correct_non) / (n_tar + n_non)
    k = int(np.argmax(acc))
    threshold = -np.inf if k == 0 else float(tally.values[k - 1])
    return Accuracy(float(acc[k]), threshold)
