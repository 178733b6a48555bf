"""Prosodic features of an utterance for the audio-based emotion indicator.

Seed 003's indicator (emotion2vec+) listens to the audio rather than reading the speaker embedding;
this is a light stand-in: pitch level, range and spread, voicing, loudness and its spread, spectral
tilt and a syllable-rate proxy, the cues that acted emotions (and the synth corpus's styles) vary.
"""

from __future__ import annotations

import warnings

import numpy as np

RATE = 16000
N_FEATURES = 9


def prosodic_features(audio: np.ndarray, rate: int = RATE) -> np.ndarray:
    """[9]: log-F0 mean, std, 5-95 % range; voiced fraction; frame dB mean, std; tilt; peaks/s; log length."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pyworld
    x = np.asarray(audio, dtype=np.float64)
    if len(x) < rate // 10:
        x = np.pad(x, (0, rate // 10 - len(x)))
    f0, times = pyworld.dio(x, rate, frame_period=10.0)
    f0 = pyworld.stonemask(x, f0, times, rate)
    voiced = f0 > 0
    log_f0 = np.log(f0[voiced]) if voiced.sum() > 1 else np.array([np.log(100.0), np.log(100.0)])
    hop, win = rate // 100, rate // 40
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(x, (0, win)), win)[::hop][: len(f0)]
    power = np.mean(frames**2, axis=1) + 1e-10
    db = 10 * np.log10(power)
    loud = db > db.max() - 40
    spectrum = np.abs(np.fft.rfft(frames[loud] * np.hanning(win), axis=1)) ** 2 + 1e-12
    freqs = np.fft.rfftfreq(win, 1 / rate)
    band = (freqs >= 100) & (freqs <= 4000)
    slope = np.polyfit(np.log(freqs[band]), np.log(spectrum[:, band]).mean(axis=0), 1)[0]
    envelope = np.convolve(power, np.ones(5) / 5, mode="same")
    peaks = (envelope[1:-1] > envelope[:-2]) & (envelope[1:-1] >= envelope[2:]) & (envelope[1:-1] > envelope.mean())
    seconds = len(x) / rate
    return np.array([
        log_f0.mean(), log_f0.std(), np.percentile(log_f0, 95) - np.percentile(log_f0, 5),
        voiced.mean(), db[loud].mean(), db[loud].std(), slope, peaks.sum() / seconds, np.log(seconds),
    ])
