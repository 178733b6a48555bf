"""Views and slices: waveform crops for training, contiguous frame slices for the attack, padding.

Training views are cut from the waveform (seed 002, section III-A: "All five views are constructed at
the waveform level") and then go through the frozen frontend. The attack observes a contiguous slice
of the frontend's output stream, cut in frames of the frame rate that frontend actually emits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from vpeval.types import FrontendOutput
from vpeval_spinv.model import FrameBatch, Layout


def crop_waveform(audio: np.ndarray, seconds: float | None, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """A contiguous crop of `seconds` at a random start; the whole waveform when shorter or seconds is None."""
    if seconds is None:
        return audio
    length = int(round(seconds * sample_rate))
    if len(audio) <= length:
        return audio
    start = int(rng.integers(0, len(audio) - length + 1))
    return audio[start : start + length]


def frames_for(seconds: float, frame_rate: float) -> int:
    """Frames covering `seconds` at the frontend's own frame rate (at least one)."""
    return max(1, int(math.ceil(seconds * frame_rate - 1e-9)))


def slice_output(output: FrontendOutput, seconds: float, rng: np.random.Generator) -> FrontendOutput:
    """A contiguous slice of `seconds` of the frontend output (all of it when shorter), random start."""
    total = len(output.tokens) if output.tokens is not None else len(output.features)
    count = frames_for(seconds, output.frame_rate)
    if total <= count:
        return output
    start = int(rng.integers(0, total - count + 1))
    cut = slice(start, start + count)
    return FrontendOutput(
        output.frame_rate,
        None if output.tokens is None else output.tokens[cut],
        output.codebook_sizes,
        None if output.features is None else output.features[cut],
    )


def layout_of(output: FrontendOutput) -> Layout:
    return Layout(
        tuple(int(s) for s in output.codebook_sizes) if output.tokens is not None else (),
        0 if output.features is None else int(output.features.shape[1]),
    )


def collate(outputs: Sequence[FrontendOutput], layout: Layout, max_frames: int) -> FrameBatch:
    """Pad frontend outputs to one batch (at most `max_frames` frames each, the first ones kept)."""
    lengths = [min(max_frames, len(o.tokens) if o.tokens is not None else len(o.features)) for o in outputs]
    longest = max(lengths)
    mask = torch.zeros(len(outputs), longest, dtype=torch.bool)
    tokens = (
        torch.zeros(len(outputs), longest, len(layout.codebook_sizes), dtype=torch.long)
        if layout.codebook_sizes
        else None
    )
    features = torch.zeros(len(outputs), longest, layout.feature_dim) if layout.feature_dim else None
    for i, (output, n) in enumerate(zip(outputs, lengths)):
        mask[i, :n] = True
        if tokens is not None:
            tokens[i, :n] = torch.from_numpy(np.asarray(output.tokens[:n], dtype=np.int64))
        if features is not None:
            features[i, :n] = torch.from_numpy(np.asarray(output.features[:n], dtype=np.float32))
    return FrameBatch(tokens, features, mask)
