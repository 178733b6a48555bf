"""Log-likelihood-ratio cost (Brummer and du Preez 2006), actual and minimum, in bits."""

from __future__ import annotations

import numpy as np

from vpeval_scoring.pav import PavBlocks, pav_blocks
from vpeval_scoring.sorted_trials import Tally

LN2 = np.log(2.0)


def trial_costs(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Each trial's cost in bits with its score read as a natural-log LLR:
    log2(1 + e^-llr) for targets, log2(1 + e^llr) for non-targets."""
    signed = np.where(targets, -scores, scores)
    with np.errstate(over="ignore"):  # a cost above the largest float (|LLR| near 1e308): actual_cllr copes
        return np.logaddexp(0.0, signed) / LN2


def actual_cllr(
    scores: np.ndarray, targets: np.ndarray, weights: np.ndarray | None = None, costs: np.ndarray | None = None
) -> float:
    """0.5 (mean target cost + mean non-target cost)."""
    costs = trial_costs(scores, targets) if costs is None else costs
    w = np.ones(len(scores)) if weights is None else np.asarray(weights, dtype=np.float64)
    w_tar = np.where(targets, w, 0.0)
    w_non = w - w_tar
    n_tar, n_non = w_tar.sum(), w_non.sum()
    if n_tar <= 0 or n_non <= 0:
        return float("nan")
    with np.errstate(over="ignore", invalid="ignore"):  # costs near 1e308 overflow the sums: _large_cllr
        value = float(0.5 * (w_tar @ costs / n_tar + w_non @ costs / n_non))
    if np.isfinite(value):
        return value
    return _large_cllr(scores, targets, w_tar, w_non)


def _large_cllr(scores: np.ndarray, targets: np.ndarray, w_tar: np.ndarray, w_non: np.ndarray) -> float:
    """Cllr of scores so far from calibrated (|LLR| near 1e308) that the sum of the costs in bits, or a
    cost itself, overflows: the costs in nats (finite for finite scores), each mean taken over costs
    divided by their largest, halved before adding. inf only where Cllr is above the largest float."""
    nats = np.logaddexp(0.0, np.where(targets, -scores, scores))

    def mean(w: np.ndarray) -> float:
        top = float(np.max(nats[w > 0]))
        return top * float(w @ (nats / top) / w.sum()) if top > 0 else 0.0

    with np.errstate(over="ignore"):
        return float((0.5 * mean(w_tar) + 0.5 * mean(w_non)) / LN2)


def min_cllr_from_blocks(blocks: PavBlocks) -> float:
    """Cllr of the PAV-calibrated LLRs, from block counts (no infinities: pure blocks cost nothing)."""
    t, n = blocks.tar, blocks.non
    odds_ratio = blocks.n_tar / blocks.n_non  # prior odds the posterior is divided by
    with np.errstate(divide="ignore", invalid="ignore"):
        # target cost log2(1 + 1/LR) with 1/LR = (n/t) * odds_ratio; non-target cost log2(1 + LR)
        tar_cost = np.where(t > 0, t * np.log1p(n / t * odds_ratio), 0.0)
        non_cost = np.where(n > 0, n * np.log1p(t / n / odds_ratio), 0.0)
    return float(0.5 * (tar_cost.sum() / blocks.n_tar + non_cost.sum() / blocks.n_non) / LN2)


def min_cllr(tally: Tally) -> float:
    tally = tally.nonempty()
    if tally.n_tar <= 0 or tally.n_non <= 0:
        return float("nan")
    return min_cllr_from_blocks(pav_blocks(tally))
