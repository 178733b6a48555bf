"""Recording conditions: what makes two takes of one speaker differ (session and utterance).

Without this, a simple MFCC-statistics embedding separates espeak-ng speakers at about 2 % EER;
band limits and spectral tilt per session, plus tilt jitter, noise at 25-40 dB SNR and level per
utterance, bring it to a realistic range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal


@dataclass
class Channel:
    """One session's microphone and room: band limits, tilt and noise colour."""

    highpass_hz: float
    lowpass_hz: float
    tilt: float  # -1 (dull) .. 1 (bright)
    noise_color: float  # 0 white .. 1 close to brown

    @classmethod
    def draw(cls, rng: np.random.Generator, amount: float = 1.0) -> Channel:
        return cls(
            highpass_hz=float(60 + amount * rng.uniform(0, 200)),
            lowpass_hz=float(7800 - amount * rng.uniform(0, 3300)),
            tilt=float(amount * rng.uniform(-0.6, 0.6)),
            noise_color=float(rng.uniform(0, 1)),
        )


def tilt_filter(audio: np.ndarray, tilt: float) -> np.ndarray:
    """First-order spectral tilt: positive emphasizes highs, negative lows."""
    c = 0.7 * min(abs(tilt), 1.0)
    if tilt > 0:
        return signal.lfilter([1.0, -c], [1.0], audio)
    if tilt < 0:
        return signal.lfilter([1.0 - c], [1.0, -c], audio)
    return audio


def record(
    speech: np.ndarray,
    rate: int,
    channel: Channel,
    tilt: float,
    snr_db: float,
    level_db: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Speech as this channel records it: filtered, tilted, with noise at `snr_db` and RMS `level_db` dBFS."""
    x = np.asarray(speech, dtype=np.float64)
    nyquist = rate / 2
    band = [channel.highpass_hz, min(channel.lowpass_hz, 0.95 * nyquist)]
    x = signal.sosfilt(signal.butter(2, band, btype="bandpass", fs=rate, output="sos"), x)
    x = tilt_filter(x, channel.tilt + tilt)
    active = np.abs(x) > 0.05 * np.max(np.abs(x)) if np.any(x) else np.ones_like(x, bool)
    speech_rms = np.sqrt(np.mean(x[active] ** 2))
    noise = signal.lfilter([1.0], [1.0, -0.95 * channel.noise_color], rng.standard_normal(len(x)))
    noise *= speech_rms / np.sqrt(np.mean(noise**2)) * 10 ** (-snr_db / 20)
    y = x + noise
    y *= 10 ** (level_db / 20) / np.sqrt(np.mean(y[active] ** 2))
    peak = np.max(np.abs(y))
    if peak > 0.98:  # a loud take is limited, not clipped
        y *= 0.98 / peak
    return y.astype(np.float32)
