"""Speech-like 16 kHz waveforms for the batching benchmarks (batched_speech, speechbrain_packed): a tone with a
3 Hz envelope and noise, one pitch per waveform, of varied lengths (what length bucketing has to deal with)."""

from __future__ import annotations

import numpy as np


def speech_like(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000
    tone = 0.3 * np.sin(2 * np.pi * (110 + 15 * seed) * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    return (tone + rng.normal(0, 0.05, t.size)).astype(np.float32)


def speech_like_set(count: int, shortest: float, longest: float) -> tuple[np.ndarray, list[np.ndarray]]:
    """`count` durations drawn uniformly from [shortest, longest] seconds (seed 0) and a waveform of each."""
    seconds = np.random.default_rng(0).uniform(shortest, longest, count)
    return seconds, [speech_like(s, i) for i, s in enumerate(seconds)]
