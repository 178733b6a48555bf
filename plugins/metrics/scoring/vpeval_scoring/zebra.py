"""ZEBRA (Nautsch et al. 2020): population and worst-case privacy disclosure of calibrated scores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval_scoring.pav import PavBlocks, pav_blocks
from vpeval_scoring.sorted_trials import Tally

# The worst-case categories on max |log10 LR| (inspired by the ENFSI verbal scale): upper bounds.
TAG_BOUNDS = (("0", np.finfo(float).eps), ("A", 1.0), ("B", 2.0), ("C", 4.0), ("D", 5.0), ("E", 6.0), ("F", np.inf))


@dataclass(frozen=True)
class Zebra:
    dece: float  # expected privacy disclosure, bits
    max_abs_log10_lr: float  # worst-case individual disclosure
    tag: str


def _z(llr: np.ndarray) -> np.ndarray:
    """Per-trial term of the ECE integral: Z(a) = 0.25 + 0.5 (a - b) / b^2 with b = e^a - 1."""
    out = np.full(len(llr), 0.25)  # a = +inf contributes 0.25
    finite = np.isfinite(llr)
    a = llr[finite]
    b = np.expm1(a)
    small = np.abs(a) < 1e-4
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(small, -0.5 + a / 3.0, (a - b) / b**2)  # series near a = 0, where Z(0) = 0
    out[finite] = 0.25 + 0.5 * term
    out[np.isneginf(llr)] = -np.inf
    return out


def dece_from_blocks(blocks: PavBlocks) -> float:
    """D_ECE = (mean over targets of Z(llr) + mean over non-targets of Z(-llr)) / ln 2, on PAV LLRs."""
    llr = blocks.llr()
    with np.errstate(invalid="ignore"):
        tar_part = np.where(blocks.tar > 0, blocks.tar * _z(llr), 0.0).sum() / blocks.n_tar
        non_part = np.where(blocks.non > 0, blocks.non * _z(-llr), 0.0).sum() / blocks.n_non
    return float((tar_part + non_part) / np.log(2.0))


def tag_of(max_abs_log10_lr: float) -> str:
    for tag, upper in TAG_BOUNDS:
        if max_abs_log10_lr <= upper:
            return tag
    return "F"


def zebra(tally: Tally) -> Zebra:
    """DECE on plain PAV LLRs; the worst case on Laplace-smoothed PAV LLRs (finite), as the ZEBRA code."""
    tally = tally.nonempty()
    if tally.n_tar <= 0 or tally.n_non <= 0:
        return Zebra(float("nan"), float("nan"), "")
    dece = dece_from_blocks(pav_blocks(tally))
    smoothed = pav_blocks(tally, laplace=True)
    worst = float(np.abs(smoothed.group_llr()).max() / np.log(10.0))
    return Zebra(dece, worst, tag_of(worst))
