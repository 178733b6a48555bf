"""Content features for frame matching: mel cepstra of the WORLD envelope, speaker-mean normalised.

Dropping c0 removes frame energy; subtracting the speaker's (or utterance's) mean cepstrum removes
most of the static vocal-tract colour, so nearest neighbours match what is said, not who says it.
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
    """Mel cepstra c1..c{n_ceps-1} [T, n_ceps - 1] of spectral envelopes sp [T, bins]."""
    bank = mel_bank(rate, sp.shape[1], n_mels)
    return dct(np.log(sp @ bank.T + 1e-12), type=2, norm="ortho", axis=1)[:, 1:n_ceps]


def mean_normalised(cepstra: np.ndarray) -> np.ndarray:
    return cepstra - cepstra.mean(axis=0, keepdims=True)
