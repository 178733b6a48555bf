"""80-band log-mel filterbank frames (Kaldi style, 25 ms window, 10 ms hop), stacked to a frame rate."""

from __future__ import annotations

import numpy as np

HOP_SECONDS = 0.010


def log_mel(audio: np.ndarray, sample_rate: int, bands: int = 80) -> np.ndarray:
    """Log-mel filterbank [T, bands] at 100 frames/s, T = ceil(samples / hop)."""
    import torch
    import torchaudio.compliance.kaldi as kaldi

    hop = int(round(HOP_SECONDS * sample_rate))
    n = max(1, -(-len(audio) // hop))
    # Pad so that frame t covers [t*hop, t*hop + window) and the last samples get a frame too.
    window = int(round(0.025 * sample_rate))
    padded = np.zeros((n - 1) * hop + window, dtype=np.float32)
    padded[: len(audio)] = audio[: len(padded)]
    wave = torch.from_numpy(padded)[None] * 32768.0  # Kaldi's int16 scale
    feats = kaldi.fbank(
        wave,
        num_mel_bins=bands,
        sample_frequency=sample_rate,
        frame_length=25.0,
        frame_shift=HOP_SECONDS * 1000,
        dither=0.0,
        snip_edges=True,
        energy_floor=1.0,
    )
    return feats.numpy()[:n].astype(np.float32)


def stack(frames: np.ndarray, factor: int) -> np.ndarray:
    """Concatenate each `factor` consecutive frames [T, D] -> [ceil(T / factor), factor * D] (edge-padded)."""
    groups = -(-len(frames) // factor)
    pad = groups * factor - len(frames)
    if pad:
        frames = np.concatenate([frames, np.repeat(frames[-1:], pad, axis=0)])
    return frames.reshape(groups, factor * frames.shape[1])
