"""Frame matching on WORLD envelopes (kNN-VC's idea): mel cepstra as content keys, kNN regression.

Dropping c0 removes frame energy; subtracting the mean cepstrum (per utterance for the source, per
speaker or pool voice for the pool) removes most of the static vocal-tract colour, so the nearest frames
match what is said rather than who says it. Shared by the poolvc and vector-vc anonymizers.
"""

from __future__ import annotations

import numpy as np
from scipy.fft import dct


def mel_bank(rate: int, bins: int, n_mels: int) -> np.ndarray:
    """Triangular mel filters [n_mels, bins] over 0 .. rate / 2."""

    def mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    edges = 700.0 * (10 ** (np.linspace(0.0, mel(rate / 2), n_mels + 2) / 2595.0) - 1.0)
    freqs = np.linspace(0.0, rate / 2, bins)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    return np.maximum(0.0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))


def envelope_cepstra(sp: np.ndarray, rate: int, n_mels: int = 40, n_ceps: int = 20) -> np.ndarray:
    """Mel cepstra c1..c{n_ceps-1} [T, n_ceps - 1] of power envelopes sp [T, bins]."""
    bank = mel_bank(rate, sp.shape[1], n_mels)
    return dct(np.log(sp @ bank.T + 1e-12), type=2, norm="ortho", axis=1)[:, 1:n_ceps]


def mean_normalised(cepstra: np.ndarray) -> np.ndarray:
    return cepstra - cepstra.mean(axis=0, keepdims=True)


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
    """Mean of the values [N, B] of each query row's k nearest keys: [T, B], in the values' dtype."""
    idx = knn_indices(query, keys, k)
    return values[idx].mean(axis=1)
