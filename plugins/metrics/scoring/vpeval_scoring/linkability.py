"""Global linkability D_sys (Gomez-Barrero et al. 2017, as the VoicePrivacy toolkits compute it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A score range under this share of the scores' magnitude is binned on the scores minus their minimum.
# Ordinary scores (cosines, LLRs) span far more, so their bins, and values, are the reference's.
NARROW = 2.0**-30


@dataclass(frozen=True)
class Linkability:
    value: float  # D_sys in [0, 1]; NaN where it is undefined, with the reason
    n_bins: int
    reason: str | None = None


def linkability(
    scores: np.ndarray,
    targets: np.ndarray,
    weights: np.ndarray | None = None,
    omega: float = 1.0,
    n_bins: int | None = None,
) -> Linkability:
    """Histograms of mated (target) and non-mated scores over min(#mated / 10, 100) equal bins between
    the global min and max; per-bin LR = p(s|mated) / p(s|non-mated); local linkability
    D(s) = 2 omega LR / (1 + omega LR) - 1 where omega LR > 1, else 0 (1 where only mated scores fall);
    D_sys = trapezoid integral over bin centres of D(s) p(s|mated).
    NaN, with the reason, where D_sys is undefined: one class missing, all scores equal, or fewer than
    2 bins (the trapezoid over one bin centre is 0 whatever the scores, so the reference's 0 there is
    no measurement)."""
    scores = np.asarray(scores, dtype=np.float64)
    w = np.ones(len(scores)) if weights is None else np.asarray(weights, dtype=np.float64)
    w_mated = np.where(targets, w, 0.0)
    n_mated = w_mated.sum()
    n_non = w.sum() - n_mated
    bins = int(min(int(n_mated / 10), 100)) if n_bins is None else int(n_bins)
    if n_mated <= 0 or n_non <= 0:
        return Linkability(float("nan"), bins, "it needs both target (mated) and non-target trials")
    if bins < 2:
        why = (
            f"{n_mated:g} target (mated) trials give {bins} histogram bin{'' if bins == 1 else 's'} "
            "(min(#mated / 10, 100))"
            if n_bins is None
            else f"bins is {bins}"
        )
        return Linkability(
            float("nan"),
            bins,
            f"{why}, and D_sys integrates over bin centres, which needs at least "
            "2 bins; score at least 20 target trials or set the metric's `bins` to 2 or more",
        )
    drawn = scores if weights is None else scores[w > 0]
    # D_sys depends only on which bin each score falls in, so it is invariant to shifting and scaling the
    # scores. Scaling by a power of two is exact, so results are unchanged, and max - min and the bin
    # densities of scores near 1e308 no longer overflow.
    scores, drawn, lo, hi = _rescaled(scores, drawn)
    if lo == hi:
        return Linkability(float("nan"), bins, f"all {len(drawn)} scores are equal")
    if hi - lo < NARROW * max(abs(lo), abs(hi)):
        # scores within a few ulps of each other (1e308 + small differences): bin edges between them
        # round to their few floats, or coincide (zero-width bins). Shifting by the minimum is then exact
        # (Sterbenz: the scores are within a factor 2 of it) and the differences get edges of their own
        scores, drawn, lo, hi = _rescaled(scores - lo, drawn - lo)
    edges = np.linspace(lo, hi, bins + 1)
    index = bin_index(np.clip(scores, lo, hi), edges)  # (clip: undrawn bootstrap trials, weight 0, may lie outside)
    width = np.diff(edges)
    y_mated = np.bincount(index, weights=w_mated, minlength=bins) / (n_mated * width)
    y_non = np.bincount(index, weights=w - w_mated, minlength=bins) / (n_non * width)
    ratio = np.divide(y_mated, y_non, out=np.ones_like(y_mated), where=y_non != 0)
    local = np.where(omega * ratio > 1, 2 * omega * ratio / (1 + omega * ratio) - 1, 0.0)
    local[(y_non == 0) & (y_mated != 0)] = 1.0
    centres = (edges[1:] + edges[:-1]) / 2
    return Linkability(float(np.trapezoid(local * y_mated, x=centres)), bins)


def _rescaled(scores: np.ndarray, drawn: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Scores and drawn scores times the power of two that brings the largest |drawn| into [0.5, 1),
    with the drawn minimum and maximum."""
    exponent = int(np.frexp(max(abs(float(drawn.min())), abs(float(drawn.max()))))[1])
    scores, drawn = np.ldexp(scores, -exponent), np.ldexp(drawn, -exponent)
    return scores, drawn, float(drawn.min()), float(drawn.max())


def bin_index(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """np.histogram's bin of each value for equal-width edges (last bin closed), computed once so that
    both classes reuse it. Values outside the edges (undrawn bootstrap trials, weight 0) are clipped."""
    bins = len(edges) - 1
    index = ((x - edges[0]) * (bins / (edges[-1] - edges[0]))).astype(np.intp)
    np.clip(index, 0, bins - 1, out=index)
    # the arithmetic can land one bin off within an ulp of an edge: correct against the edges themselves
    index -= x < edges[index]
    index += (x >= edges[index + 1]) & (index != bins - 1)
    return np.clip(index, 0, bins - 1)
