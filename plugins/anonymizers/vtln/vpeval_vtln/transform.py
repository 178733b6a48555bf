"""VTLN on the short-time Fourier transform: the whole spectrum, or the envelope only.

"spectrum" (VoiceMask's frequency warping): every target bin takes the source's magnitude at the
inverse-warped frequency, so formants and harmonics move together and F0 moves by the warp's slope at
low frequencies. The phase is a phase vocoder's (Laroche and Dolson, 1999, generalised from a constant
ratio to the warp): each target bin advances by the warped instantaneous frequency of its source bin,
so the partials stay continuous from frame to frame.

"envelope": the spectral envelope is the cepstrally smoothed log magnitude (liftered below the
shortest pitch period, so harmonics stay out of it); the complex STFT is multiplied by warped /
original envelope, a real gain, so phase and harmonics (hence F0) are the source's.
"""

from __future__ import annotations

import numpy as np

MAX_GAIN_DB = 30.0  # a formant moved into a deep spectral valley would otherwise boost noise without bound


def frame_sizes(rate: int, win_ms: float, hop_ms: float) -> tuple[int, int, int]:
    win = max(16, int(round(win_ms * 1e-3 * rate)))
    hop = max(1, min(win // 2, int(round(hop_ms * 1e-3 * rate))))
    n_fft = 1 << int(np.ceil(np.log2(win)))
    return win, hop, n_fft


def cepstral_envelope(log_magnitude: np.ndarray, n_fft: int, lifter: int) -> np.ndarray:
    """Smoothed log magnitude [frames, bins] keeping the first `lifter` quefrency coefficients."""
    cepstrum = np.fft.irfft(log_magnitude, n=n_fft, axis=-1)
    cepstrum[:, lifter : n_fft - lifter + 1] = 0.0
    return np.fft.rfft(cepstrum, n=n_fft, axis=-1).real


def warp_envelope(log_envelope: np.ndarray, source_frequencies: np.ndarray) -> np.ndarray:
    """Rows of a log envelope over 0..pi read at `source_frequencies` (radians) by linear interpolation."""
    bins = log_envelope.shape[1]
    position = np.clip(source_frequencies / np.pi * (bins - 1), 0.0, bins - 1.0)
    low = np.minimum(np.floor(position).astype(int), bins - 2)
    weight = position - low
    return log_envelope[:, low] * (1.0 - weight) + log_envelope[:, low + 1] * weight


def warp_spectrum(frames: np.ndarray, hop: int, n_fft: int, forward, source_frequencies_of) -> np.ndarray:
    """Frames [T, bins] of a whole-spectrum warp with phase-vocoder phases (see the module text)."""
    bins = frames.shape[1]
    grid = np.linspace(0.0, np.pi, bins)  # bin k sits at 2 pi k / n_fft radians per sample
    position = np.clip(source_frequencies_of(grid) / np.pi * (bins - 1), 0.0, bins - 1.0)
    low = np.minimum(np.floor(position).astype(int), bins - 2)
    weight = position - low
    nearest = np.rint(position).astype(int)
    magnitude = np.abs(frames)
    warped_magnitude = magnitude[:, low] * (1.0 - weight) + magnitude[:, low + 1] * weight
    phase = np.angle(frames)
    # Instantaneous frequency of every source bin from the phase advance over one hop.
    advance = np.diff(phase, axis=0, prepend=phase[:1]) - hop * grid
    advance = np.mod(advance + np.pi, 2.0 * np.pi) - np.pi
    instantaneous = np.clip(grid + advance / hop, 0.0, np.pi)
    target_frequency = forward(instantaneous[:, nearest])
    out_phase = np.cumsum(hop * target_frequency, axis=0)
    out_phase += phase[0, nearest] - out_phase[0]  # start from the source's first-frame phases
    return warped_magnitude * np.exp(1j * out_phase)


def warp_envelope_gain(frames: np.ndarray, n_fft: int, lifter: int, source_frequencies_of) -> np.ndarray:
    """Frames [T, bins] times warped / original cepstral envelope (bounded), phase untouched."""
    log_magnitude = np.log(np.abs(frames) + 1e-9)
    envelope = cepstral_envelope(log_magnitude, n_fft, lifter)
    grid = np.linspace(0.0, np.pi, frames.shape[1])
    warped = warp_envelope(envelope, source_frequencies_of(grid))
    gain_limit = MAX_GAIN_DB / 20.0 * np.log(10.0)
    return frames * np.exp(np.clip(warped - envelope, -gain_limit, gain_limit))


def vtln(
    audio: np.ndarray,
    rate: int,
    forward,
    source_frequencies_of,
    mode: str = "spectrum",
    win_ms: float = 40.0,
    hop_ms: float = 10.0,
    lifter_ms: float = 1.8,
) -> np.ndarray:
    """VTLN-warped copy of `audio` (float64, same length).

    `forward(w)` maps source frequencies (radians per sample, 0..pi) to target ones; and
    `source_frequencies_of(grid)` is its inverse, the source frequency that moves to each target one.
    """
    from scipy.signal import istft, stft

    win, hop, n_fft = frame_sizes(rate, win_ms, hop_ms)
    x = np.zeros(max(len(audio), win))  # the STFT needs one full window; the tail is trimmed again
    x[: len(audio)] = audio
    _, _, spec = stft(
        x, fs=rate, window="hann", nperseg=win, noverlap=win - hop, nfft=n_fft, boundary="even", padded=True
    )
    frames = spec.T  # [frames, bins]
    if mode == "spectrum":
        warped = warp_spectrum(frames, hop, n_fft, forward, source_frequencies_of)
    else:
        lifter = max(2, int(round(lifter_ms * 1e-3 * rate)))
        warped = warp_envelope_gain(frames, n_fft, lifter, source_frequencies_of)
    _, y = istft(warped.T, fs=rate, window="hann", nperseg=win, noverlap=win - hop, nfft=n_fft, boundary=True)
    out = np.zeros(len(audio))
    out[: min(len(audio), len(y))] = y[: len(audio)]
    return out
