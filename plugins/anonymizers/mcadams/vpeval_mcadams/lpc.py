"""Linear prediction on many frames at once: Burg analysis, roots, polynomials and filters.

Every function works on a batch of frames [F, ...] with loops only over the (small) LPC order or the
frame length, never over frames, so a whole utterance is one set of numpy calls.
"""

from __future__ import annotations

import numpy as np

_TINY = np.finfo(np.float64).tiny


def burg_lpc(frames: np.ndarray, order: int) -> np.ndarray:
    """Burg's LPC coefficients [F, order + 1] (a[:, 0] = 1) of frames [F, W].

    The same recursion as librosa.lpc (which the VoicePrivacy B2 code calls per frame), batched. The
    prediction errors are updated in place in two buffers (the same operations in the same order as
    `fwd + k * bwd`, so the same bits), which keeps a block of frames in the CPU cache.
    """
    frames = np.asarray(frames, dtype=np.float64)
    n_frames = frames.shape[0]
    a = np.zeros((n_frames, order + 1))
    a[:, 0] = 1.0
    fwd = frames[:, 1:].copy()
    bwd = frames[:, :-1].copy()
    k_bwd = np.empty_like(fwd)
    k_fwd = np.empty_like(fwd)
    den = np.einsum("fw,fw->f", fwd, fwd) + np.einsum("fw,fw->f", bwd, bwd)
    for i in range(order):
        k = -2.0 * np.einsum("fw,fw->f", bwd, fwd) / (den + _TINY)
        kc = k[:, None]
        a[:, 1 : i + 2] = a[:, 1 : i + 2] + kc * a[:, i::-1]  # right side is evaluated first
        np.multiply(kc, bwd, out=k_bwd)
        np.multiply(kc, fwd, out=k_fwd)
        np.add(fwd, k_bwd, out=fwd)
        np.add(bwd, k_fwd, out=bwd)
        den = (1.0 - k**2) * den - bwd[:, -1] ** 2 - fwd[:, 0] ** 2
        fwd, bwd = fwd[:, 1:], bwd[:, :-1]
        k_bwd, k_fwd = k_bwd[:, 1:], k_fwd[:, 1:]
    return a


def poly_roots(a: np.ndarray) -> np.ndarray:
    """Roots [F, p] of the polynomials a [F, p + 1] (a[:, 0] = 1): eigenvalues of companion matrices.

    LAPACK returns real roots with an exactly zero imaginary part and complex ones in exact
    conjugate pairs, which the pole warping relies on (as np.roots does for one polynomial).
    """
    n_frames, p1 = a.shape
    p = p1 - 1
    companion = np.zeros((n_frames, p, p))
    companion[:, 0, :] = -a[:, 1:] / a[:, :1]
    companion[:, np.arange(1, p), np.arange(p - 1)] = 1.0
    return np.linalg.eigvals(companion)


def poly_from_roots(roots: np.ndarray) -> np.ndarray:
    """Monic polynomial coefficients [F, p + 1] with the given roots [F, p] (batched np.poly)."""
    n_frames, p = roots.shape
    c = np.zeros((n_frames, p + 1), dtype=np.complex128)
    c[:, 0] = 1.0
    for k in range(p):
        c[:, 1 : k + 2] = c[:, 1 : k + 2] - roots[:, k : k + 1] * c[:, : k + 1]
    return c


def fir_rows(b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each row of x [F, W] filtered by its own FIR b [F, q + 1], zero initial state (lfilter(b, 1, x))."""
    y = b[:, :1] * x
    for k in range(1, b.shape[1]):
        y[:, k:] += b[:, k : k + 1] * x[:, :-k]
    return y


def all_pole_rows(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each row of x [F, W] through its own all-pole filter 1 / a [F, p + 1] (lfilter(1, a, x)).

    A loop over the W samples, vectorised over frames: y[n] = (x[n] - sum_k a_k y[n - k]) / a_0.
    """
    n_frames, width = x.shape
    p = a.shape[1] - 1
    y = np.zeros((n_frames, width + p))
    # Reversed coefficients so y[:, n : n + p] (the p previous outputs, oldest first) dots with them.
    a_rev = np.ascontiguousarray(a[:, :0:-1] / a[:, :1])
    x_scaled = x / a[:, :1]
    for n in range(width):
        y[:, n + p] = x_scaled[:, n] - np.einsum("fk,fk->f", a_rev, y[:, n : n + p])
    return y[:, p:]
