"""Mixture weights over pool voices whose vectors approximate a requested pseudo-speaker vector."""

from __future__ import annotations

import numpy as np
from scipy.optimize import nnls


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def fit_weights(target: np.ndarray, means: np.ndarray, max_voices: int) -> np.ndarray:
    """Non-negative weights [V] summing to one, at most `max_voices` non-zero, such that the weighted
    sum of the voices' unit vectors points where the unit target points (least squares)."""
    basis = unit(means)
    weights, _ = nnls(basis.T, unit(target))
    if weights.sum() <= 0:  # target outside the cone of the pool: its nearest voice
        return nearest_weights(target, means)
    keep = np.argsort(-weights, kind="stable")[:max_voices]
    out = np.zeros_like(weights)
    out[keep] = weights[keep]
    return out / out.sum()


def nearest_weights(target: np.ndarray, means: np.ndarray) -> np.ndarray:
    """All weight on the voice nearest by cosine (what snapping to one pool speaker does)."""
    out = np.zeros(len(means))
    out[int(np.argmax(unit(means) @ unit(target)))] = 1.0
    return out
