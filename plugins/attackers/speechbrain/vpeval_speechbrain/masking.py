"""Padded batches whose real frames get the numbers each utterance gets alone.

Two things in speechbrain's networks see a batch, not an utterance: a "same" Conv1d pads with reflection
at the end of the padded tensor, so a shorter utterance's last frames read padding instead of their own
reflection; and StatisticsPooling (x-vector) draws its Gaussian noise for the whole batch and scales it
by the batch's min and max. Here every such Conv1d reflects at each row's own length (a gather with
per-row indices; the frames beyond a row's length are never read by its real frames), and the pooling
noise comes from a generator seeded per call, the same vector for every row, as a batch of one draws it.
The rest is length-aware already (InputNormalization, SE blocks and attentive pooling take wav_lens).
"""

from __future__ import annotations

import types

import torch


class RowLengths:
    """The frame count of every row of the batch being embedded (None: the whole tensor is real)."""

    def __init__(self) -> None:
        self.frames: torch.Tensor | None = None


def reflect_per_row(model: torch.nn.Module, rows: RowLengths) -> None:
    """Patch (in place) every speechbrain Conv1d with padding "same" and mode "reflect" in `model`."""
    from speechbrain.nnet.CNN import Conv1d

    for module in model.modules():
        if isinstance(module, Conv1d) and module.padding == "same" and module.padding_mode == "reflect":
            module._manage_padding = types.MethodType(_padding(module._manage_padding, rows), module)


def _padding(original, rows: RowLengths):
    def manage_padding(self, x: torch.Tensor, kernel_size: int, dilation: int, stride: int) -> torch.Tensor:
        from speechbrain.nnet.CNN import get_padding_elem

        frames = rows.frames
        if frames is None or frames.shape[0] != x.shape[0] or bool((frames == x.shape[-1]).all()):
            return original(x, kernel_size, dilation, stride)  # speechbrain's own padding
        left, right = get_padding_elem(self.in_channels, stride, kernel_size, dilation)
        length = x.shape[-1]
        positions = torch.arange(-left, length + right, device=x.device).unsqueeze(0)  # [1, P]
        ends = frames.to(x.device).unsqueeze(1)  # [B, 1]
        index = positions.abs()  # reflection at the start, as F.pad(mode="reflect")
        index = torch.where(positions >= ends, 2 * (ends - 1) - positions, index)  # ... and at each row's end
        index = index.clamp(0, length - 1)  # beyond the reflected margin: never read by real frames
        return x.gather(2, index.unsqueeze(1).expand(-1, x.shape[1], -1))

    return manage_padding


def seeded_pooling_noise(model: torch.nn.Module, seed: int) -> None:
    """StatisticsPooling's noise from its own generator seeded at every call, one vector for all rows."""
    from speechbrain.nnet.pooling import StatisticsPooling

    for module in model.modules():
        if isinstance(module, StatisticsPooling):
            module._get_gauss_noise = types.MethodType(_noise(seed), module)


def _noise(seed: int):
    def get_gauss_noise(self, shape_of_tensor, device="cpu") -> torch.Tensor:
        generator = torch.Generator(device=device).manual_seed(seed)
        gnoise = torch.randn((1, *shape_of_tensor[1:]), device=device, generator=generator)
        # speechbrain's scaling of a (1, C) draw: what a batch of one gets
        gnoise -= torch.min(gnoise)
        gnoise /= torch.max(gnoise)
        gnoise = self.eps * ((1 - 9) * gnoise + 9)
        return gnoise.expand(shape_of_tensor).clone()

    return get_gauss_noise
