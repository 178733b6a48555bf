"""A straightforward frame-by-frame McAdams transform, the way the VoicePrivacy B2 script loops.

Kept as the ground truth the vectorised version is tested against and the baseline its speed is
measured against (benchmarks/anonymizer_speed.py). Not used by the anonymizer.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from vpeval_mcadams.lpc import burg_lpc
from vpeval_mcadams.transform import EPS, analysis_window, frame_layout


def mcadams_reference(audio, sample_rate, alpha=0.8, win_ms=20.0, shift_ms=10.0, order=20):
    samples = np.asarray(audio, dtype=np.float64) + EPS
    n = len(samples)
    win, shift, n_frames = frame_layout(n, sample_rate, win_ms, shift_ms)
    padded = np.zeros((n_frames - 1) * shift + win)
    padded[:n] = samples
    window = analysis_window(win, shift)
    out = np.zeros(len(padded))
    for m in range(n_frames):
        frame = padded[m * shift : m * shift + win] * window
        a = burg_lpc((frame + EPS)[None], order)[0]
        poles = np.roots(a)
        complex_idx = np.where(~np.isreal(poles))[0]
        for i in complex_idx:
            angle = np.angle(poles[i])
            new_angle = np.sign(angle) * min(np.pi, abs(angle) ** alpha)
            poles[i] = np.abs(poles[i]) * np.exp(1j * new_angle)
        a_new = np.real(np.poly(poles))
        residual = lfilter(a, [1.0], frame)
        out[m * shift : m * shift + win] += lfilter([1.0], a_new, residual) * window
    return out[:n]
