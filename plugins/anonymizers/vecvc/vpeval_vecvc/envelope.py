"""Spectral-envelope matching: mel cepstra as content keys, kNN regression of log envelopes.

Dropping c0 removes frame energy; subtracting the mean cepstrum (per utterance for the source, per
pool voice for the pool) removes most of the static vocal-tract colour, so the nearest frames match
what is said rather than who says it (kNN-VC's idea on WORLD envelopes).
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


def cepstra(sp: np.ndarray, rate: int, n_mels: int, n_ceps: int) -> np.ndarray:
    """Mel cepstra c1..c{n_ceps-1} [T, n_ceps - 1] of power envelopes sp [T, bins]."""
    bank = mel_bank(rate, sp.shape[1], n_mels)
    return dct(np.log(sp @ bank.T + 1e-12), type=2, norm="ortho", axis=1)[:, 1:n_ceps]


def centred(x: np.ndarray) -> np.ndarray:
    return x - x.mean(axis=0, keepdims=True)


def knn_mean(query: np.ndarray, keys: np.ndarray, values: np.ndarray, k: int, chunk: int = 2048) -> np.ndarray:
    """Mean of the values [N, B] of each query row's k nearest keys (Euclidean): [T, B]."""
    # float64: BLAS rounding in float32 can flip near-tied neighbours between two runs on one input.
    query = np.asarray(query, dtype=np.float64)
    keys = np.asarray(keys, dtype=np.float64)
    k = min(k, len(keys))
    key_sq = np.einsum("nc,nc->n", keys, keys)
    out = np.empty((len(query), values.shape[1]))
    for start in range(0, len(query), chunk):
        dist = key_sq[None, :] - 2.0 * query[start : start + chunk] @ keys.T
        idx = np.argpartition(dist, k - 1, axis=1)[:, :k] if k < len(keys) else np.tile(np.arange(k), (len(dist), 1))
        out[start : start + chunk] = values[idx].mean(axis=1)
    return out
