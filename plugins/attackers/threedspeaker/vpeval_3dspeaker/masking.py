"""Per-row time masks for zero-padded batches: each row gets the numbers it gets alone.

Convolutions over time with a kernel wider than one frame are the only place padding leaks into real
frames (batch norm in eval mode, activations and 1x1 convolutions work frame by frame), so the padded
frames are set to zero right before each such convolution, which is what the convolution's own zero
padding shows an unbatched utterance. Pooling over time (means, deviations, CAM++'s segment means)
counts each row's real frames only. `lengths` None means one unpadded batch: the published operations.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def strided(lengths: torch.Tensor | None, stride: int) -> torch.Tensor | None:
    """Frames left after a convolution with this stride, kernel 1 or 2 * padding + 1: ceil(length / stride)."""
    return lengths if lengths is None or stride == 1 else (lengths + stride - 1) // stride


def real_frames(lengths: torch.Tensor, frames: int) -> torch.Tensor:
    """[B, frames] True on each row's real frames."""
    return torch.arange(frames, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def zero_padding(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """x [B, ..., T] with each row's frames from its length on set to zero."""
    if lengths is None:
        return x
    keep = real_frames(lengths, x.shape[-1]).view(x.shape[0], *([1] * (x.dim() - 2)), x.shape[-1])
    return x.masked_fill(~keep, 0.0)


def time_mean(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Mean over the last axis [B, ...] of each row's real frames."""
    if lengths is None:
        return x.mean(dim=-1)
    count = lengths.to(x.dtype).view(x.shape[0], *([1] * (x.dim() - 2)))
    return zero_padding(x, lengths).sum(dim=-1) / count


def time_variance(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
    """Unbiased variance over the last axis (torch.var's default) of each row's real frames."""
    if lengths is None:
        return torch.var(x, dim=-1)
    count = lengths.to(x.dtype).view(x.shape[0], *([1] * (x.dim() - 2)))
    centred = zero_padding(x - time_mean(x, lengths).unsqueeze(-1), lengths)
    return centred.pow(2).sum(dim=-1) / (count - 1)


def segment_means(x: torch.Tensor, lengths: torch.Tensor | None, segment: int = 100) -> torch.Tensor:
    """CAM++'s seg_pooling (avg_pool1d, ceil_mode): each frame gets the mean of its `segment`-frame segment
    (the last one of a row: of the real frames it holds), x [B, C, T] -> [B, C, T]."""
    frames = x.shape[-1]
    if lengths is None:
        seg = F.avg_pool1d(x, kernel_size=segment, stride=segment, ceil_mode=True)
    else:
        count = -(-frames // segment)
        summed = F.pad(zero_padding(x, lengths), (0, count * segment - frames))
        summed = summed.view(x.shape[0], x.shape[1], count, segment).sum(dim=-1)
        starts = torch.arange(count, device=x.device) * segment
        held = (lengths.unsqueeze(1) - starts.unsqueeze(0)).clamp(min=1, max=segment)  # [B, count]
        seg = summed / held.to(x.dtype).unsqueeze(1)
    shape = seg.shape  # each segment's mean repeated over its frames, as the published code expands it
    return seg.unsqueeze(-1).expand(*shape, segment).reshape(*shape[:-1], -1)[..., :frames]
