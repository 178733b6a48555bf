"""VTLN warping functions on normalised angular frequency w in [0, pi], and their inverses."""

from __future__ import annotations

import numpy as np


def bilinear(w: np.ndarray, alpha: float) -> np.ndarray:
    """The all-pass (bilinear) warp w + 2 atan(alpha sin w / (1 - alpha cos w)), |alpha| < 1.

    alpha > 0 moves every frequency up (most in the low and middle range), alpha < 0 down; 0 and pi
    stay fixed. Its inverse is the same function with -alpha.
    """
    return w + 2.0 * np.arctan2(alpha * np.sin(w), 1.0 - alpha * np.cos(w))


def piecewise_linear(w: np.ndarray, factor: float, corner: float) -> np.ndarray:
    """w * factor up to a corner, then a straight line to (pi, pi), so the band edge stays fixed.

    The corner sits at corner * pi / max(factor, 1), so the first segment never passes pi.
    """
    w0 = corner * np.pi / max(factor, 1.0)
    upper = factor * w0 + (np.pi - factor * w0) * (w - w0) / (np.pi - w0)
    return np.where(w <= w0, factor * w, upper)


def piecewise_linear_inverse(w: np.ndarray, factor: float, corner: float) -> np.ndarray:
    """The exact inverse of piecewise_linear: w / factor below the moved corner, a line above it."""
    w0 = corner * np.pi / max(factor, 1.0)
    y0 = factor * w0
    upper = w0 + (np.pi - w0) * (w - y0) / (np.pi - y0)
    return np.where(w <= y0, w / factor, upper)
