"""k-nearest-neighbour regression of frames (kNN-VC's matching step, on WORLD features)."""

from __future__ import annotations

import numpy as np


def knn_indices(query: np.ndarray, keys: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    """Indices [T, k] of the k keys nearest (Euclidean) to each query row, in chunks to bound memory."""
    # float64: BLAS results can differ in the last bits with memory alignment; in float32 that flips
    # near-tied neighbours between two runs on the same input.
    query = np.asarray(query, dtype=np.float64)
    keys = np.asarray(keys, dtype=np.float64)
    k = min(k, len(keys))
    key_sq = np.einsum("nc,nc->n", keys, keys)
    # 2 q.k as q.(2k): scaling by two is exact, so the same bits as 2.0 * (q @ keys.T) with one pass
    # over the [chunk, N] distances fewer; subtracting in place saves another.
    twice_keys_t = (2.0 * keys).T
    out = np.empty((len(query), k), dtype=np.int64)
    for start in range(0, len(query), chunk):
        q = query[start : start + chunk]
        dist = q @ twice_keys_t
        np.subtract(key_sq[None, :], dist, out=dist)  # |k|^2 - 2 q.k (+ |q|^2, constant per row)
        part = np.argpartition(dist, k - 1, axis=1)[:, :k] if k < len(keys) else np.tile(np.arange(k), (len(q), 1))
        out[start : start + chunk] = part
    return out


def knn_average(query: np.ndarray, keys: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Mean of the values [N, B] of each query row's k nearest keys: [T, B]."""
    idx = knn_indices(query, keys, k)
    return values[idx].mean(axis=1)
