"""The gain an emotion evaluator's input is brought to by the uar metric's `level_normalization`.

Both evaluators read it: the acoustic one (uar.py) and the SpeechBrain classifier (speechbrain_emotion.py).
"""

from __future__ import annotations

import numpy as np

# Levels the evaluator's input is brought to (per utterance, before features).
RMS_TARGET = 0.1  # -20 dBFS
PEAK_TARGET = 0.99


def normalise_level(audio: np.ndarray, mode: str) -> np.ndarray:
    """The utterance scaled to RMS_TARGET ('rms') or its largest sample to PEAK_TARGET ('peak'); 'none' and
    silent audio unchanged. Only the gain changes, so what the evaluator then reads is not the level."""
    if mode == "none":
        return audio
    level = (
        float(np.sqrt(np.mean(np.square(audio, dtype=np.float64)))) if mode == "rms" else float(np.max(np.abs(audio)))
    )
    if not np.isfinite(level) or level <= 1e-9:
        return audio
    return (audio * ((RMS_TARGET if mode == "rms" else PEAK_TARGET) / level)).astype(audio.dtype, copy=False)
