"""Views and slices: waveform crops for training, contiguous frame slices for the attack, padding.

Training views are cut from the waveform (seed 002, section III-A: "All five views are constructed at
the waveform level") and then go through the frozen frontend. The attack observes a contiguous slice
of the frontend's output stream, cut in frames of the frame rate that frontend actually emits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

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


def slice_output(
    output: FrontendOutput,
    seconds: float,
    rng: np.random.Generator,
    frames: Callable[[float, float], int] = frames_for,
) -> FrontendOutput:
    """A contiguous slice of `seconds` of the frontend output (all of it when shorter), random start.

    `frames(seconds, frame_rate)` counts the frames of `seconds`: by default ceil(seconds x rate); the
    attacker passes the count its frontend emits for a waveform that long where the frontend says
    (Qwen3-Omni: 13 per whole second, then the tail's), so a slice holds what a crop of that length gives."""
    total = len(output.tokens) if output.tokens is not None else len(output.features)
    count = frames(seconds, output.frame_rate)
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


def collate(outputs: Sequence[FrontendOutput], layout: Layout, max_frames: int, device: str = "cpu") -> FrameBatch:
    """Pad frontend outputs to one batch (at most `max_frames` frames each, the first ones kept), on `device`."""
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
            tokens[i, :n] = torch.from_numpy(np.array(output.tokens[:n], dtype=np.int64))  # a copy: maps are read-only
        if features is not None:
            features[i, :n] = torch.from_numpy(np.array(output.features[:n], dtype=np.float32))
    if device != "cpu":
        tokens, features = (None if t is None else t.to(device, non_blocking=True) for t in (tokens, features))
        mask = mask.to(device, non_blocking=True)
    return FrameBatch(tokens, features, mask)


class FrameStore:
    """The frontend output of every training utterance, on disk and memory-mapped (`views_from: frames`).

    Tokens and features go to two flat files (int64 [frames, Q], float32 [frames, D]) as they are encoded,
    with each utterance's first frame and count; reading maps them, so memory holds only what the views of
    one batch touch, whatever the corpus size."""

    def __init__(self, folder: Path, layout: Layout, frame_rate: float):
        self.folder, self.layout, self.frame_rate = Path(folder), layout, frame_rate
        self.folder.mkdir(parents=True, exist_ok=True)
        self.spans: list[tuple[int, int]] = []
        self._files = {
            "tokens": open(self.folder / "tokens.bin", "wb") if layout.codebook_sizes else None,
            "features": open(self.folder / "features.bin", "wb") if layout.feature_dim else None,
        }
        self._maps: dict[str, np.ndarray] = {}
        self._frames = 0

    def append(self, output: FrontendOutput) -> None:
        n = len(output.tokens) if output.tokens is not None else len(output.features)
        if self._files["tokens"] is not None:
            self._files["tokens"].write(np.ascontiguousarray(output.tokens, dtype=np.int64).tobytes())
        if self._files["features"] is not None:
            self._files["features"].write(np.ascontiguousarray(output.features, dtype=np.float32).tobytes())
        self.spans.append((self._frames, n))
        self._frames += n

    def close(self) -> None:
        """Finish writing and map the files read-only."""
        widths = {
            "tokens": (np.int64, len(self.layout.codebook_sizes)),
            "features": (np.float32, self.layout.feature_dim),
        }
        for name, handle in self._files.items():
            if handle is not None:
                handle.close()
                dtype, width = widths[name]
                self._maps[name] = np.memmap(
                    self.folder / f"{name}.bin", dtype=dtype, mode="r", shape=(max(1, self._frames), width)
                )
        self._files = {"tokens": None, "features": None}

    def __getitem__(self, index: int) -> FrontendOutput:
        start, count = self.spans[index]
        part = slice(start, start + count)
        tokens = self._maps["tokens"][part] if "tokens" in self._maps else None
        features = self._maps["features"][part] if "features" in self._maps else None
        return FrontendOutput(self.frame_rate, tokens, self.layout.codebook_sizes, features)

    def __len__(self) -> int:
        return len(self.spans)
