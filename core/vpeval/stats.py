"""Small statistics plugins share (early stopping, sanity checks, tests, confidence intervals).

The numbers vpeval reports come from metric plugins; this holds the quick EER plugins use while they
work and the speaker-level bootstrap every metric plugin draws its confidence intervals with, so
neither is rewritten in every package.

Speaker-level bootstrap: trials (or utterances) of one speaker are correlated, so resampling them one
by one understates the uncertainty. A replicate draws as many speakers as there are, with replacement;
an item is kept as often as its speaker was drawn, so a replicate is a weight vector over the items.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


def equal_error_rate(target_scores: np.ndarray, nontarget_scores: np.ndarray) -> float:
    """EER in [0, 1] as speechbrain (and so VoicePrivacy 2024/2026) defines it, from one sort.

    Candidate thresholds are the sorted unique scores and the midpoints between neighbours; false
    rejection is the share of target scores <= threshold, false acceptance the share of non-target
    scores > threshold; the threshold with the smallest |FA - FR| gives EER = (FA + FR) / 2.
    """
    targets = np.sort(np.asarray(target_scores, dtype=np.float64))
    nontargets = np.sort(np.asarray(nontarget_scores, dtype=np.float64))
    if targets.size == 0 or nontargets.size == 0:
        raise ValueError("EER needs at least one target and one non-target score")
    unique = np.unique(np.concatenate([targets, nontargets]))
    thresholds = np.sort(np.concatenate([unique, (unique[1:] + unique[:-1]) / 2]))
    false_reject = np.searchsorted(targets, thresholds, side="right") / targets.size
    false_accept = 1.0 - np.searchsorted(nontargets, thresholds, side="right") / nontargets.size
    best = np.argmin(np.abs(false_accept - false_reject))
    return float((false_accept[best] + false_reject[best]) / 2)


def eer(scores: np.ndarray, targets: np.ndarray) -> float:
    """EER in [0, 1] of scores with boolean target labels."""
    scores = np.asarray(scores, dtype=np.float64)
    targets = np.asarray(targets, dtype=bool)
    return equal_error_rate(scores[targets], scores[~targets])


CHUNK = 64  # replicates drawn at once: one [CHUNK, speakers] count matrix


def speaker_weights(speakers: np.ndarray, replicates: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Per replicate, each item's weight: how many times its speaker was drawn."""
    _, index = np.unique(np.asarray(speakers).astype(str), return_inverse=True)
    n = int(index.max()) + 1
    done = 0
    while done < replicates:
        b = min(CHUNK, replicates - done)
        draws = rng.integers(0, n, size=(b, n))
        flat = (np.arange(b)[:, None] * n + draws).ravel()
        counts = np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)
        for row in counts:
            yield row[index]
        done += b


def percentile_interval(
    values: np.ndarray, confidence: float, min_valid: float = 0.5
) -> tuple[float | None, float | None]:
    """The central `confidence` interval of the replicate values, or (None, None) when fewer than
    `min_valid` of the replicates gave a number (for example a draw without any target trial)."""
    values = np.asarray(values, dtype=np.float64)
    ok = values[np.isfinite(values)]
    if len(values) == 0 or len(ok) < max(2, min_valid * len(values)):
        return None, None
    low, high = np.quantile(ok, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)
