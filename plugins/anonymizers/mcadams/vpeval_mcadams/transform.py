"""The McAdams transformation of one waveform, vectorised over frames (VoicePrivacy B2 recipe).

Per frame: LPC analysis (Burg, order 20) of a sqrt-Hann-windowed 20 ms frame, residual by inverse
filtering, complex pole angles phi -> phi ** alpha (real poles kept), resynthesis of the residual
through the warped all-pole filter, synthesis window, overlap-add with a 10 ms hop.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from vpeval_mcadams.lpc import all_pole_rows, burg_lpc, fir_rows, poly_from_roots, poly_roots

EPS = float(np.finfo(np.float32).eps)
BLOCK_FRAMES = 256


def frame_layout(n_samples: int, sample_rate: int, win_ms: float, shift_ms: float) -> tuple[int, int, int]:
    """Window and hop in samples and the number of frames that cover the whole signal."""
    win = int(np.floor(win_ms * 0.001 * sample_rate))
    shift = int(np.floor(shift_ms * 0.001 * sample_rate))
    n_frames = 1 + int(np.ceil(max(0, n_samples - win) / shift))
    return win, shift, n_frames


def analysis_window(win: int, shift: int) -> np.ndarray:
    """sqrt(Hann / K), K = sum(Hann) / hop: analysis times synthesis window overlap-adds to one."""
    hann = np.hanning(win)
    return np.sqrt(hann / (hann.sum() / shift))


def warp_poles(poles: np.ndarray, alpha: float) -> np.ndarray:
    """Complex poles r e^{i phi} -> r e^{i sign(phi) min(pi, |phi| ** alpha)}; real poles unchanged."""
    complex_pole = poles.imag != 0
    angle = np.angle(poles)
    new_angle = np.sign(angle) * np.clip(np.abs(angle) ** alpha, 0.0, np.pi)
    warped = np.abs(poles) * np.exp(1j * new_angle)
    return np.where(complex_pole, warped, poles)


def mcadams_frames(frames: np.ndarray, alpha: float, order: int) -> np.ndarray:
    """Anonymized frames [F, W] from windowed frames [F, W] (before the synthesis window)."""
    a = np.empty((len(frames), order + 1))
    residual = np.empty_like(frames)
    # Frames are independent, so Burg and the inverse filter on blocks of frames give the same bits as
    # on one batch; a block's passes over its arrays stay in the CPU cache, the whole utterance's do not.
    for start in range(0, len(frames), BLOCK_FRAMES):
        block = slice(start, start + BLOCK_FRAMES)
        a[block] = burg_lpc(frames[block] + EPS, order)
        residual[block] = fir_rows(a[block], frames[block])
    poles = warp_poles(poly_roots(a), alpha)
    a_new = poly_from_roots(poles).real
    return all_pole_rows(a_new, residual)


def mcadams(
    audio: np.ndarray,
    sample_rate: int,
    alpha: float = 0.8,
    win_ms: float = 20.0,
    shift_ms: float = 10.0,
    order: int = 20,
) -> np.ndarray:
    """McAdams-anonymized copy of `audio` (float64, same length), before any level normalisation."""
    samples = np.asarray(audio, dtype=np.float64) + EPS
    n = len(samples)
    win, shift, n_frames = frame_layout(n, sample_rate, win_ms, shift_ms)
    padded = np.zeros((n_frames - 1) * shift + win)
    padded[:n] = samples
    window = analysis_window(win, shift)
    frames = sliding_window_view(padded, win)[::shift] * window
    out_frames = mcadams_frames(frames, alpha, order)
    out_frames *= window
    return overlap_add(out_frames, shift, len(padded))[:n]


def overlap_add(frames: np.ndarray, shift: int, length: int) -> np.ndarray:
    """Sum of frames [F, W] placed every `shift` samples into a signal of `length` samples.

    Frames whose indices are equal modulo ceil(W / shift) never overlap, so each such group is
    laid end to end with one reshape and added at once.
    """
    n_frames, win = frames.shape
    groups = int(np.ceil(win / shift))
    step = groups * shift
    out = np.zeros(length)
    for phase in range(min(groups, n_frames)):
        group = frames[phase::groups]
        block = np.zeros((len(group), step))
        block[:, :win] = group
        flat = block.reshape(-1)
        start = phase * shift
        end = min(length, start + len(flat))
        out[start:end] += flat[: end - start]
    return out
