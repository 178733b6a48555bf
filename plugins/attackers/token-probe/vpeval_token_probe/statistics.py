"""One fixed-length vector per frontend output: codebook-usage histograms plus feature moments."""

from __future__ import annotations

import numpy as np

from vpeval.types import FrontendOutput


def layout(output: FrontendOutput) -> dict:
    """What the statistics vector is made of; every utterance must share it."""
    return {
        "codebook_sizes": tuple(int(s) for s in output.codebook_sizes) if output.tokens is not None else (),
        "feature_dim": 0 if output.features is None else int(output.features.shape[1]),
    }


def utterance_statistics(output: FrontendOutput, with_std: bool) -> np.ndarray:
    """Per-codebook token histograms (each sums to 1) then the mean (and std) of the features."""
    parts = []
    if output.tokens is not None:
        tokens = np.asarray(output.tokens, dtype=np.int64)
        for q, size in enumerate(output.codebook_sizes):
            counts = np.bincount(np.clip(tokens[:, q], 0, size - 1), minlength=size).astype(np.float64)
            parts.append(counts / max(1.0, counts.sum()))
    if output.features is not None:
        feats = np.asarray(output.features, dtype=np.float64)
        parts.append(feats.mean(axis=0))
        if with_std:
            parts.append(feats.std(axis=0))
    return np.concatenate(parts)
