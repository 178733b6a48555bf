"""resemblyzer's preprocess_wav, made safe for any input.

Same steps and constants (volume up to -30 dBFS, never down; webrtcvad at aggressiveness 3 on 30 ms
windows, moving average of 8, dilation by 6 windows), with three guards resemblyzer lacks: silent
input is left alone instead of turning into NaN, the float-to-int16 conversion for the VAD clips
instead of wrapping around, and when the VAD finds no voice the audio is kept whole instead of
becoming empty.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import binary_dilation

SAMPLE_RATE = 16000
TARGET_DBFS = -30.0
VAD_WINDOW_MS = 30
VAD_MOVING_AVERAGE = 8
VAD_MAX_SILENCE = 6
INT16_MAX = 2**15 - 1


def normalize_volume(audio: np.ndarray, target_dbfs: float = TARGET_DBFS) -> np.ndarray:
    """Raise quiet audio to `target_dbfs` RMS; louder audio is left as it is (resemblyzer: increase_only)."""
    rms = float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if audio.size else 0.0
    if rms <= 0.0:
        return audio
    change_db = target_dbfs - 20 * np.log10(rms)
    if change_db <= 0:
        return audio
    return (audio * 10 ** (change_db / 20)).astype(np.float32)


def voiced_mask(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Per-sample bool mask of the voiced regions (length: audio cut to whole VAD windows)."""
    import webrtcvad  # imports pkg_resources: only when trimming is asked for

    window = VAD_WINDOW_MS * sample_rate // 1000
    usable = audio.size - audio.size % window
    pcm = (np.clip(audio[:usable], -1.0, 1.0) * INT16_MAX).round().astype("<i2").tobytes()
    vad = webrtcvad.Vad(3)
    flags = np.array(
        [vad.is_speech(pcm[start * 2 : (start + window) * 2], sample_rate) for start in range(0, usable, window)],
        dtype=np.float64,
    )
    if flags.size == 0:
        return np.zeros(0, dtype=bool)
    width = VAD_MOVING_AVERAGE
    padded = np.concatenate([np.zeros((width - 1) // 2), flags, np.zeros(width // 2)])
    sums = np.cumsum(padded)
    sums[width:] = sums[width:] - sums[:-width]
    smoothed = np.round(sums[width - 1 :] / width).astype(bool)
    dilated = binary_dilation(smoothed, np.ones(VAD_MAX_SILENCE + 1))
    return np.repeat(dilated, window)


def trim_long_silences(audio: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    mask = voiced_mask(audio, sample_rate)
    if not mask.any():
        return audio
    return audio[: mask.size][mask]


def preprocess(audio: np.ndarray, vad: bool = True, normalize: bool = True) -> np.ndarray:
    """16 kHz mono float32 in, the waveform GE2E expects out."""
    audio = np.asarray(audio, dtype=np.float32)
    if normalize:
        audio = normalize_volume(audio)
    if vad:
        audio = trim_long_silences(audio)
    return audio
