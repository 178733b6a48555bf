"""Padded, masked batches of variable-length inputs: length buckets, padding, masks.

Torch plugins batch utterances of similar length together (little padding, so little wasted compute)
and pass the true lengths along, so that masked pooling and normalisation give each utterance the
numbers it gets alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def length_buckets(lengths: Sequence[int], batch_size: int, max_frames: int | None = None) -> list[list[int]]:
    """Indices of `lengths` grouped into batches of similar length, each index exactly once.

    Sorted by length (ties by index, so the grouping is deterministic), then cut into batches of at most
    `batch_size`; with `max_frames`, a batch also stops growing before batch-size x longest length
    exceeds it (a batch always holds at least one index), which bounds the padded tensor's memory.
    """
    _check_sizes(batch_size, max_frames)
    order = sorted(range(len(lengths)), key=lambda i: (int(lengths[i]), i))
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # ascending order: the newcomer is the longest of the batch it would join
        too_big = max_frames is not None and current and (len(current) + 1) * int(lengths[i]) > max_frames
        if current and (len(current) == batch_size or too_big):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


def packed_buckets(lengths: Sequence[int], batch_size: int, max_frames: int | None = None) -> list[list[int]]:
    """Indices of `lengths` grouped for packed batches (frames concatenated, no padding), each index once.

    A packed batch costs the sum of its lengths, not batch-size x longest, so `max_frames` bounds that
    sum. Sorted by length (ties by index) and cut into the fewest batches the bounds allow, of near-equal
    frame sums: 32 utterances of 13 200 frames at 8000 make two batches of about 6600, where
    length_buckets' padded rule makes three (the last of one utterance, a whole batch's per-call work
    for it). A single index longer than `max_frames` is a batch of its own.
    """
    _check_sizes(batch_size, max_frames)
    order = sorted(range(len(lengths)), key=lambda i: (int(lengths[i]), i))
    if not order:
        return []
    total = sum(int(lengths[i]) for i in order)
    count = max(-(-len(order) // batch_size), -(-total // max_frames) if max_frames is not None else 1)
    target = total / count
    batches: list[list[int]] = []
    current: list[int] = []
    frames = 0
    for i in order:
        n = int(lengths[i])
        full = len(current) == batch_size or (max_frames is not None and frames + n > max_frames)
        # cut where the batch ends nearest the target sum (the last batch takes the rest)
        balanced = len(batches) < count - 1 and frames + n / 2 > target
        if current and (full or balanced):
            batches.append(current)
            current, frames = [], 0
        current.append(i)
        frames += n
    batches.append(current)
    return batches


def _check_sizes(batch_size: int, max_frames: int | None) -> None:
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if max_frames is not None and max_frames < 1:
        raise ValueError(f"max_frames must be at least 1, got {max_frames}")


def pad_batch(arrays: Sequence[np.ndarray], device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Arrays [T_i, ...] (same trailing shape and dtype) -> zero-padded tensor [B, T_max, ...] and lengths [B].

    Both tensors are on `device`; the lengths are int64.
    """
    if len(arrays) == 0:
        raise ValueError("pad_batch needs at least one array")
    arrays = [np.asarray(a) for a in arrays]
    trailing = arrays[0].shape[1:]
    for a in arrays:
        if a.ndim == 0 or a.shape[1:] != trailing:
            raise ValueError(f"pad_batch needs arrays [T, ...] of one trailing shape, got {a.shape} and {trailing}")
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    padded = np.zeros((len(arrays), int(lengths.max()), *trailing), dtype=arrays[0].dtype)
    for row, a in enumerate(arrays):
        padded[row, : a.shape[0]] = a
    return torch.from_numpy(padded).to(device), torch.from_numpy(lengths).to(device)


def length_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """Boolean mask [B, max_len]: True where a frame is real (index < that row's length)."""
    positions = torch.arange(max_len, device=lengths.device)
    return positions.unsqueeze(0) < lengths.to(positions.dtype).unsqueeze(1)
