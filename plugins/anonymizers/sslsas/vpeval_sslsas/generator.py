"""The conditioned HiFi-GAN of SSL-SAS (adapted_from_facebookresearch/models_test.py, `Generator`),
written here from a reading of the published code, with its state-dict key names.

Every convolution is weight-normalised as torch's old `weight_norm` hook stores it (`weight_g`,
`weight_v`, `bias`; the norm over every axis but the first, for the transposed convolutions too), so a
released `g_*` checkpoint's `generator` keys load strictly. Shapes come from the release's config.json:
`model_in_dim` (393 = 200 content + 1 F0 + 192 speaker), `upsample_rates`, `upsample_kernel_sizes`,
`upsample_initial_channel`, `resblock` ("1" or "2"), `resblock_kernel_sizes`, `resblock_dilation_sizes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

LRELU_SLOPE = 0.1  # the published slope between layers; the last activation uses torch's default (0.01)


def get_padding(kernel_size: int, dilation: int = 1) -> int:
    return (kernel_size * dilation - dilation) // 2


@dataclass(frozen=True)
class GeneratorConfig:
    """The HiFi-GAN's shape, as the release's config.json names it."""

    model_in_dim: int
    upsample_rates: tuple[int, ...]
    upsample_kernel_sizes: tuple[int, ...]
    upsample_initial_channel: int
    resblock: str
    resblock_kernel_sizes: tuple[int, ...]
    resblock_dilation_sizes: tuple[tuple[int, ...], ...]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GeneratorConfig:
        """From a parsed config.json; KeyError / TypeError / ValueError for a missing or malformed field."""
        config = cls(
            model_in_dim=int(data.get("model_in_dim", 128)),  # the published default when absent
            upsample_rates=tuple(int(v) for v in data["upsample_rates"]),
            upsample_kernel_sizes=tuple(int(v) for v in data["upsample_kernel_sizes"]),
            upsample_initial_channel=int(data["upsample_initial_channel"]),
            resblock=str(data["resblock"]),
            resblock_kernel_sizes=tuple(int(v) for v in data["resblock_kernel_sizes"]),
            resblock_dilation_sizes=tuple(tuple(int(d) for d in ds) for ds in data["resblock_dilation_sizes"]),
        )
        if config.resblock not in ("1", "2"):
            raise ValueError(f"resblock is {config.resblock!r}, not '1' or '2'")
        if len(config.upsample_rates) != len(config.upsample_kernel_sizes) or not config.upsample_rates:
            raise ValueError("upsample_rates and upsample_kernel_sizes differ in length or are empty")
        if len(config.resblock_kernel_sizes) != len(config.resblock_dilation_sizes):
            raise ValueError("resblock_kernel_sizes and resblock_dilation_sizes differ in length")
        wanted = 3 if config.resblock == "1" else 2
        if any(len(ds) < wanted for ds in config.resblock_dilation_sizes):
            raise ValueError(f"resblock {config.resblock} needs {wanted} dilations per kernel")
        if config.upsample_initial_channel % (2 ** len(config.upsample_rates)):
            raise ValueError("upsample_initial_channel does not halve once per upsampling layer")
        return config

    @property
    def hop(self) -> int:
        """Output samples per input frame: the product of the upsampling rates."""
        hop = 1
        for rate in self.upsample_rates:
            hop *= rate
        return hop


class WNConv1d(nn.Module):
    """A (transposed) 1-d convolution under torch's weight-norm hook: parameters `weight_g`, `weight_v`,
    `bias`, weight = g * v / ||v|| with the norm over every axis but the first (the hook's dim=0)."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int,
        stride: int = 1,
        dilation: int = 1,
        padding: int = 0,
        transposed: bool = False,
    ):
        super().__init__()
        shape = (in_channels, out_channels, kernel_size) if transposed else (out_channels, in_channels, kernel_size)
        v = torch.empty(shape).normal_(0.0, 0.01)
        self.weight_v = nn.Parameter(v)
        self.weight_g = nn.Parameter(v.norm(dim=(1, 2), keepdim=True).clone())
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.stride, self.dilation, self.padding, self.transposed = stride, dilation, padding, transposed

    def weight(self) -> torch.Tensor:
        v = self.weight_v
        return self.weight_g * v / v.norm(dim=(1, 2), keepdim=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight().to(x.dtype)
        b = self.bias.to(x.dtype)
        if self.transposed:
            return F.conv_transpose1d(x, w, b, stride=self.stride, padding=self.padding)
        return F.conv1d(x, w, b, stride=self.stride, padding=self.padding, dilation=self.dilation)


class ResBlock1(nn.Module):
    """Three dilated convolutions (convs1), each followed by an undilated one (convs2), residual."""

    def __init__(self, channels: int, kernel_size: int, dilation: Sequence[int]):
        super().__init__()
        self.convs1 = nn.ModuleList(
            WNConv1d(channels, channels, kernel_size, dilation=d, padding=get_padding(kernel_size, d))
            for d in dilation[:3]
        )
        self.convs2 = nn.ModuleList(
            WNConv1d(channels, channels, kernel_size, padding=get_padding(kernel_size, 1)) for _ in range(3)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c1, c2 in zip(self.convs1, self.convs2, strict=True):
            xt = c2(F.leaky_relu(c1(F.leaky_relu(x, LRELU_SLOPE)), LRELU_SLOPE))
            x = xt + x
        return x


class ResBlock2(nn.Module):
    """Two dilated convolutions, residual."""

    def __init__(self, channels: int, kernel_size: int, dilation: Sequence[int]):
        super().__init__()
        self.convs = nn.ModuleList(
            WNConv1d(channels, channels, kernel_size, dilation=d, padding=get_padding(kernel_size, d))
            for d in dilation[:2]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for c in self.convs:
            x = c(F.leaky_relu(x, LRELU_SLOPE)) + x
        return x


class Generator(nn.Module):
    """Frames [B, model_in_dim, T] -> waveform [B, 1, T * hop] in (-1, 1)."""

    def __init__(self, config: GeneratorConfig):
        super().__init__()
        self.config = config
        h = config
        self.num_kernels = len(h.resblock_kernel_sizes)
        self.conv_pre = WNConv1d(h.model_in_dim, h.upsample_initial_channel, 7, padding=3)
        block = ResBlock1 if h.resblock == "1" else ResBlock2
        self.ups = nn.ModuleList(
            WNConv1d(
                h.upsample_initial_channel // (2**i),
                h.upsample_initial_channel // (2 ** (i + 1)),
                k,
                stride=u,
                padding=(k - u) // 2,
                transposed=True,
            )
            for i, (u, k) in enumerate(zip(h.upsample_rates, h.upsample_kernel_sizes, strict=True))
        )
        self.resblocks = nn.ModuleList()
        channels = h.upsample_initial_channel
        for i in range(len(self.ups)):
            channels = h.upsample_initial_channel // (2 ** (i + 1))
            for k, d in zip(h.resblock_kernel_sizes, h.resblock_dilation_sizes, strict=True):
                self.resblocks.append(block(channels, k, d))
        self.conv_post = WNConv1d(channels, 1, 7, padding=3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_pre(x)
        for i, up in enumerate(self.ups):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            blocks = self.resblocks[i * self.num_kernels : (i + 1) * self.num_kernels]
            xs = blocks[0](x)
            for block in blocks[1:]:
                xs = xs + block(x)
            x = xs / self.num_kernels
        x = self.conv_post(F.leaky_relu(x))  # torch's default slope here, as published
        return torch.tanh(x)
