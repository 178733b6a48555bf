"""Synthetic speaker embeddings with known structure, for tests and for checking the evaluation.

Each row is 10 * (unit speaker direction) + 3 * (unit emotion direction) + unit Gaussian noise, the
emotion directions shared by all speakers: emotion is a direction in the space, as seed 003 assumes.
"""

from __future__ import annotations

import numpy as np

EMOTIONS = ("neutral", "happy", "sad", "angry")


def synthetic_embeddings(
    n_speakers: int, n_utts: int, seed: int, dim: int = 32, speaker_scale: float = 10.0, emotion_scale: float = 3.0
):
    """(embeddings [S * U, dim], speakers [S * U], emotions [S * U])."""
    emotion_dirs = np.random.default_rng(99).normal(size=(len(EMOTIONS), dim))
    emotion_dirs /= np.linalg.norm(emotion_dirs, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    spk = rng.normal(size=(n_speakers, dim))
    spk /= np.linalg.norm(spk, axis=1, keepdims=True)
    emo = rng.integers(len(EMOTIONS), size=n_speakers * n_utts)
    x = (
        np.repeat(spk, n_utts, axis=0) * speaker_scale
        + emotion_dirs[emo] * emotion_scale
        + rng.normal(0, 1.0, (n_speakers * n_utts, dim))
    )
    speakers = np.repeat([f"p{seed}-{s:03d}" for s in range(n_speakers)], n_utts)
    return x, speakers, np.array(EMOTIONS)[emo]
