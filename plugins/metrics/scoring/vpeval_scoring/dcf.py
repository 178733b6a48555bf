"""Normalised minimum detection cost (NIST SRE; VoicePrivacy 2022 reports p_target 0.01 and 0.001)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval_scoring.sorted_trials import Tally

NAN = float("nan")


@dataclass(frozen=True)
class MinDcf:
    value: float  # normalised: divided by min(c_miss p_target, c_fa (1 - p_target))
    threshold: float  # reject scores <= threshold (-inf: accept everything)
    p_miss: float
    p_fa: float


def error_rates(tally: Tally) -> tuple[np.ndarray, np.ndarray]:
    """P_miss and P_fa for 'accept everything' and then for rejecting scores <= each distinct score."""
    n_tar, n_non = float(tally.n_tar), float(tally.n_non)
    p_miss = np.concatenate([[0.0], np.cumsum(tally.tar) / n_tar])
    p_fa = np.concatenate([[1.0], (n_non - np.cumsum(tally.non)) / n_non])
    return p_miss, p_fa


def min_dcf(tally: Tally, p_target: float, c_miss: float = 1.0, c_fa: float = 1.0, rates=None) -> MinDcf:
    """min over thresholds of c_miss P_miss p_t + c_fa P_fa (1 - p_t), normalised.

    The thresholds are every distinct score (reject <= t, as SpeechBrain) plus 'accept everything', so
    the normalised value never exceeds 1 (the better of the two trivial systems). SpeechBrain's minDCF
    is the same minimum without the normalisation. `rates` reuses error_rates() across priors.
    """
    if tally.n_tar <= 0 or tally.n_non <= 0:
        return MinDcf(NAN, NAN, NAN, NAN)
    p_miss, p_fa = error_rates(tally) if rates is None else rates
    cost = c_miss * p_target * p_miss + c_fa * (1.0 - p_target) * p_fa
    k = int(np.argmin(cost))
    norm = min(c_miss * p_target, c_fa * (1.0 - p_target))
    threshold = -np.inf if k == 0 else float(tally.values[k - 1])
    return MinDcf(float(cost[k] / norm), threshold, float(p_miss[k]), float(p_fa[k]))
