"""Equal error rates: SpeechBrain's step EER (what VoicePrivacy 2024 ranks by) and the ROCCH-EER.

Both read a `Tally` (per-score counts from one sort), so each is a cumulative sum: O(n log n) overall.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval_scoring.pav import PavBlocks, pav_blocks
from vpeval_scoring.sorted_trials import Tally

NAN = float("nan")


@dataclass(frozen=True)
class StepEer:
    eer: float  # fraction
    threshold: float
    far: float  # false acceptance at the threshold
    frr: float  # false rejection at the threshold


def step_eer(tally: Tally) -> StepEer:
    """speechbrain.utils.metric_stats.EER without its Python loop over thresholds.

    SpeechBrain's candidates are the distinct scores and the midpoints between neighbours, with
    FRR = share of targets <= t and FAR = share of non-targets > t. No score lies strictly between two
    neighbours, so a midpoint has exactly the rates of the score just below it and comes after it in the
    sorted candidate list; its first-minimum rule therefore always picks a score, and scanning the
    distinct scores alone gives the same EER and threshold.
    """
    cum_tar = np.cumsum(tally.tar)
    cum_non = np.cumsum(tally.non)
    n_tar, n_non = cum_tar[-1], cum_non[-1]
    if n_tar <= 0 or n_non <= 0:
        return StepEer(NAN, NAN, NAN, NAN)
    if np.issubdtype(cum_tar.dtype, np.integer):
        # |FAR - FRR| scaled by n_tar * n_non is an integer: ties are broken exactly, first one wins.
        gap = np.abs((n_non - cum_non) * n_tar - cum_tar * n_non)
    else:
        gap = np.abs((n_non - cum_non) / n_non - cum_tar / n_tar)
    k = int(np.argmin(gap))
    frr = float(cum_tar[k] / n_tar)
    far = float((n_non - cum_non[k]) / n_non)
    return StepEer((far + frr) / 2, float(tally.values[k]), far, frr)


@dataclass(frozen=True)
class RocchEer:
    eer: float  # fraction
    threshold_low: float  # the hull segment holding the EER runs between these two score thresholds
    threshold_high: float


def rocch_eer(tally: Tally) -> RocchEer:
    """EER on the ROC convex hull (BOSARIS rocch2eer): PAV gives the hull vertices, each hull segment's
    line crosses P_miss = P_fa, and the largest crossing is the EER."""
    tally = tally.nonempty()
    if tally.n_tar <= 0 or tally.n_non <= 0:
        return RocchEer(NAN, NAN, NAN)
    return rocch_eer_from_blocks(pav_blocks(tally), tally.values)


def hull_points(blocks: PavBlocks) -> tuple[np.ndarray, np.ndarray]:
    """ROCCH vertices (P_fa, P_miss), from 'accept everything' to 'reject everything'."""
    p_miss = np.concatenate([[0.0], np.cumsum(blocks.tar) / blocks.n_tar])
    p_fa = np.concatenate([[1.0], 1.0 - np.cumsum(blocks.non) / blocks.n_non])
    return p_fa, p_miss


def rocch_eer_from_blocks(blocks: PavBlocks, values: np.ndarray) -> RocchEer:
    p_fa, p_miss = hull_points(blocks)
    x0, y0 = p_fa[:-1], p_miss[:-1]
    dx, dy = np.diff(p_fa), np.diff(p_miss)
    # Horizontal and vertical hull segments only touch the diagonal at 0 (BOSARIS gives them 0).
    usable = (dx != 0) & (dy != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = np.where(usable, (y0 * dx - x0 * dy) / (dx - dy), 0.0)
    k = int(np.argmax(crossing))
    # Vertex j rejects the first j blocks: its threshold is the highest score of block j - 1.
    block_top = values[np.append(blocks.first_group[1:], len(values)) - 1]
    thresholds = np.concatenate([[-np.inf], block_top])
    return RocchEer(float(max(crossing[k], 0.0)), float(thresholds[k]), float(thresholds[k + 1]))
