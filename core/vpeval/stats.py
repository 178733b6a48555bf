"""Small statistics plugins use internally (early stopping, sanity checks, tests).

The numbers vpeval reports come from metric plugins; this is the one shared, quick EER that plugins
use while they work, so it is not rewritten in every package.
"""

from __future__ import annotations

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
