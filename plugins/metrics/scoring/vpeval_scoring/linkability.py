"""Global linkability D_sys (Gomez-Barrero et al. 2017, as the VoicePrivacy toolkits compute it)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Linkability:
    value: float  # D_sys in [0, 1]
    n_bins: int


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
    D_sys = trapezoid integral over bin centres of D(s) p(s|mated)."""
    scores = np.asarray(scores, dtype=np.float64)
    w = np.ones(len(scores)) if weights is None else np.asarray(weights, dtype=np.float64)
    w_mated = np.where(targets, w, 0.0)
    n_mated = w_mated.sum()
    n_non = w.sum() - n_mated
    bins = int(min(int(n_mated / 10), 100)) if n_bins is None else int(n_bins)
    if n_mated <= 0 or n_non <= 0 or bins < 1:
        return Linkability(float("nan"), bins)
    drawn = scores if weights is None else scores[w > 0]
    # D_sys is invariant to the scale of the scores. Scaling by a power of two is exact, so results are
    # unchanged, and max - min and the bin densities of scores near 1e308 no longer overflow.
    exponent = np.frexp(max(abs(float(drawn.min())), abs(float(drawn.max()))))[1]
    scores, drawn = np.ldexp(scores, -exponent), np.ldexp(drawn, -exponent)
    lo, hi = float(drawn.min()), float(drawn.max())
    if lo == hi:
        return Linkability(float("nan"), bins)
    edges = np.linspace(lo, hi, bins + 1)
    index = bin_index(scores, edges)
    width = np.diff(edges)
    y_mated = np.bincount(index, weights=w_mated, minlength=bins) / (n_mated * width)
    y_non = np.bincount(index, weights=w - w_mated, minlength=bins) / (n_non * width)
    ratio = np.divide(y_mated, y_non, out=np.ones_like(y_mated), where=y_non != 0)
    local = np.where(omega * ratio > 1, 2 * omega * ratio / (1 + omega * ratio) - 1, 0.0)
    local[(y_non == 0) & (y_mated != 0)] = 1.0
    centres = (edges[1:] + edges[:-1]) / 2
    return Linkability(float(np.trapezoid(local * y_mated, x=centres)), bins)


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
