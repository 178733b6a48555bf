"""Pool-adjacent-violators (isotonic regression) of the target labels ordered by score.

The fitted posterior P(target | score) is a non-decreasing step function; its blocks are the vertices
of the ROC convex hull, and logit(P) minus the prior log-odds is the optimally calibrated LLR (Brummer
and du Preez 2006, BOSARIS). Tied scores start in one group, so equal scores always get the same LLR
(BOSARIS orders ties by label instead, which only matters on tied scores).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import isotonic_regression

from vpeval_scoring.sorted_trials import Tally


@dataclass
class PavBlocks:
    """The blocks PAV pools the score groups into, ascending by score."""

    first_group: np.ndarray  # index of each block's first group [B]
    tar: np.ndarray  # target count (weight) per block, pseudo-counts included when laplace
    non: np.ndarray  # non-target count per block
    n_tar: float  # real target total (prior log-odds use these, as BOSARIS does)
    n_non: float
    n_groups: int
    laplace: bool

    def llr(self) -> np.ndarray:
        """Calibrated natural-log LLR per block: logit(posterior) - log(n_tar / n_non); +-inf for pure blocks."""
        with np.errstate(divide="ignore"):
            return np.log(self.tar) - np.log(self.non) - np.log(self.n_tar / self.n_non)

    def group_llr(self) -> np.ndarray:
        """Calibrated LLR of every score group (the real groups only when laplace pseudo-groups were added)."""
        sizes = np.diff(np.append(self.first_group, self.n_groups))
        per_group = np.repeat(self.llr(), sizes)
        return per_group[1:-1] if self.laplace else per_group


def pav(tally: Tally, laplace: bool = False) -> PavBlocks:
    """PAV on a tally whose every score carries weight (see Tally.nonempty).

    laplace adds one target and one non-target below the lowest and above the highest score, which keeps
    every LLR finite (ZEBRA's worst case and the VPC 2022 similarity matrices use it).
    """
    tar = np.asarray(tally.tar, dtype=np.float64)
    non = np.asarray(tally.non, dtype=np.float64)
    n_tar, n_non = float(tar.sum()), float(non.sum())
    if laplace:
        tar = np.concatenate([[1.0], tar, [1.0]])
        non = np.concatenate([[1.0], non, [1.0]])
    weight = tar + non
    fit = isotonic_regression(tar / weight, weights=weight, increasing=True)
    first = np.asarray(fit.blocks[:-1], dtype=np.int64)
    return PavBlocks(
        first_group=first,
        tar=np.add.reduceat(tar, first),
        non=np.add.reduceat(non, first),
        n_tar=n_tar,
        n_non=n_non,
        n_groups=len(tar),
        laplace=laplace,
    )


def pav_blocks(tally: Tally, laplace: bool = False) -> PavBlocks:
    """The PAV blocks of this (non-empty) tally, computed once and kept in `tally.fits`."""
    if laplace not in tally.fits:
        tally.fits[laplace] = pav(tally, laplace)
    return tally.fits[laplace]
