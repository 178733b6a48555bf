"""The acoustic codec: Fish-Speech 1.5's firefly GAN VQ generator (firefly-gan-vq-fsq-8x1024-21hz-generator.pth).

encode: log-mel (44.1 kHz, hop 512) -> ConvNeXt backbone -> 4x causal downsampling -> 8 groups of
finite scalar quantization (levels 8, 5, 5, 5: 1000 codes each) = 8 codebooks at 21.5 Hz.
decode: codes -> FSQ values -> 4x upsampling -> HiFi-GAN head (hop 512) -> waveform.

FSQ follows vector-quantize-pytorch 1.14.24 (the version StreamVoiceAnon pins): GroupedResidualFSQ with
one quantizer per group, each group's ResidualFSQ projecting 64 -> 4 dims, bounding once before the
layer and once inside it (the upstream "double bound"), rounding, and projecting back out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vpeval_streamvoiceanon.blocks import (
    CausalConv,
    CausalTransConv,
    ConvNeXtBlock,
    ConvNeXtEncoder,
    LogMel,
    downsampler,
    prod,
)


@dataclass
class CodecConfig:
    """configs/hydra_arcs/vocoders/firefly_gan_vq.yaml."""

    sample_rate: int = 44100
    n_mels: int = 160
    n_fft: int = 2048
    hop_length: int = 512
    win_length: int = 2048
    backbone_depths: list[int] = field(default_factory=lambda: [3, 3, 9, 3])
    backbone_dims: list[int] = field(default_factory=lambda: [128, 256, 384, 512])
    backbone_kernel: int = 7
    upsample_rates: list[int] = field(default_factory=lambda: [8, 8, 2, 2, 2])
    upsample_kernel_sizes: list[int] = field(default_factory=lambda: [16, 16, 4, 4, 4])
    resblock_kernel_sizes: list[int] = field(default_factory=lambda: [3, 7, 11])
    resblock_dilation_sizes: list[list[int]] = field(default_factory=lambda: [[1, 3, 5], [1, 3, 5], [1, 3, 5]])
    head_num_mels: int = 512
    upsample_initial_channel: int = 512
    pre_conv_kernel_size: int = 13
    post_conv_kernel_size: int = 13
    quantizer_input_dim: int = 512
    n_groups: int = 8
    n_codebooks: int = 1
    levels: list[int] = field(default_factory=lambda: [8, 5, 5, 5])
    downsample_factor: list[int] = field(default_factory=lambda: [2, 2])


class ScalarQuantizer(nn.Module):
    """A ResidualFSQ with one quantizer (project_in / project_out). double_bound: vector-quantize-pytorch
    1.14's bound before the layer as well as inside it (the codec's groups); Spark-TTS's copy bounds once."""

    def __init__(self, dim: int, levels: list[int], double_bound: bool = True):
        super().__init__()
        self.double_bound = double_bound
        width = len(levels)
        self.project_in = nn.Linear(dim, width) if dim != width else nn.Identity()
        self.project_out = nn.Linear(width, dim) if dim != width else nn.Identity()
        levels_t = torch.tensor(levels, dtype=torch.int64)
        basis = torch.cumprod(torch.tensor([1] + levels[:-1], dtype=torch.int64), 0)
        self.register_buffer("levels", levels_t, persistent=False)
        self.register_buffer("basis", basis, persistent=False)

    def bound(self, z: Tensor) -> Tensor:
        levels = self.levels.to(z.dtype)
        half = (levels - 1) * (1 + 1e-3) / 2
        offset = torch.where(self.levels % 2 == 0, 0.5, 0.0).to(z.dtype)
        shift = torch.atanh(offset / half)
        return torch.tanh(z + shift) * half - offset

    def rounded(self, x: Tensor) -> Tensor:
        """Integer levels in [-(L // 2), L - 1 - L // 2] per projected dim."""
        z = self.project_in(x.float())
        if self.double_bound:
            z = self.bound(z)
        return torch.round(self.bound(z))

    def encode(self, x: Tensor) -> Tensor:
        """[B, T, dim] -> [B, T] indices."""
        level_index = (self.rounded(x) + (self.levels // 2)).long()
        return (level_index * self.basis).sum(-1)

    def quantize(self, x: Tensor) -> Tensor:
        """[B, T, dim] -> the quantized values projected back out, [B, T, dim]."""
        return self.project_out(self.rounded(x) / (self.levels // 2).float())

    def decode(self, indices: Tensor) -> Tensor:
        """[B, T] -> [B, T, dim]."""
        level_index = (indices[..., None] // self.basis) % self.levels
        half = (self.levels // 2).float()
        return self.project_out((level_index.float() - half) / half)


class FSQQuantizer(nn.Module):
    """DownsampleFiniteScalarQuantize: downsample, grouped FSQ (residual_fsq.rvqs), upsample."""

    def __init__(self, dim: int, n_groups: int, levels: list[int], factors: list[int]):
        super().__init__()
        self.downsample = downsampler(dim, factors)
        self.residual_fsq = nn.Module()
        self.residual_fsq.rvqs = nn.ModuleList(ScalarQuantizer(dim // n_groups, levels) for _ in range(n_groups))
        self.upsample = nn.Sequential(
            *[nn.Sequential(CausalTransConv(dim, dim, f, stride=f), ConvNeXtBlock(dim)) for f in reversed(factors)]
        )
        self.factor = prod(factors)

    def encode(self, features: Tensor) -> Tensor:
        """[B, dim, T_mel] -> [B, groups, T_mel / factor]."""
        z = self.downsample(features).transpose(1, 2)
        chunks = z.chunk(len(self.residual_fsq.rvqs), dim=-1)
        return torch.stack([q.encode(c) for q, c in zip(self.residual_fsq.rvqs, chunks, strict=True)], dim=1)

    def decode(self, codes: Tensor) -> Tensor:
        """[B, groups, T] -> [B, dim, T x factor]."""
        parts = [q.decode(codes[:, g]) for g, q in enumerate(self.residual_fsq.rvqs)]
        return self.upsample(torch.cat(parts, dim=-1).transpose(1, 2))


class ResBlock(nn.Module):
    """HiFi-GAN ResBlock1 with causal convolutions and SiLU."""

    def __init__(self, channels: int, kernel: int, dilations: list[int]):
        super().__init__()
        self.convs1 = nn.ModuleList(CausalConv(channels, channels, kernel, dilation=d) for d in dilations)
        self.convs2 = nn.ModuleList(CausalConv(channels, channels, kernel, dilation=d) for d in dilations)

    def forward(self, x: Tensor) -> Tensor:
        for c1, c2 in zip(self.convs1, self.convs2, strict=True):
            x = x + c2(F.silu(c1(F.silu(x))))
        return x


class ParallelBlock(nn.Module):
    def __init__(self, channels: int, kernels: list[int], dilations: list[list[int]]):
        super().__init__()
        self.blocks = nn.ModuleList(ResBlock(channels, k, d) for k, d in zip(kernels, dilations, strict=True))

    def forward(self, x: Tensor) -> Tensor:
        return torch.stack([b(x) for b in self.blocks], dim=0).mean(dim=0)


class HiFiGAN(nn.Module):
    """The firefly HiFiGANGenerator head (weight norm folded into plain weights at load time)."""

    def __init__(self, c: CodecConfig):
        super().__init__()
        if prod(c.upsample_rates) != c.hop_length:
            raise ValueError(f"codec upsample_rates {c.upsample_rates} do not multiply to hop_length {c.hop_length}")
        ch0 = c.upsample_initial_channel
        self.conv_pre = CausalConv(c.head_num_mels, ch0, c.pre_conv_kernel_size)
        self.ups = nn.ModuleList(
            CausalTransConv(ch0 // 2**i, ch0 // 2 ** (i + 1), k, stride=u)
            for i, (u, k) in enumerate(zip(c.upsample_rates, c.upsample_kernel_sizes, strict=True))
        )
        self.resblocks = nn.ModuleList(
            ParallelBlock(ch0 // 2 ** (i + 1), c.resblock_kernel_sizes, c.resblock_dilation_sizes)
            for i in range(len(self.ups))
        )
        self.conv_post = CausalConv(ch0 // 2 ** len(self.ups), 1, c.post_conv_kernel_size)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv_pre(x)
        for up, block in zip(self.ups, self.resblocks, strict=True):
            x = block(up(F.silu(x)))
        return torch.tanh(self.conv_post(F.silu(x)))


class FireflyCodec(nn.Module):
    """FireflyArchitecture of firefly.py: spec_transform, backbone, quantizer, head."""

    def __init__(self, c: CodecConfig | None = None):
        super().__init__()
        c = c or CodecConfig()
        self.config = c
        self.spec_transform = LogMel(c.sample_rate, c.n_fft, c.win_length, c.hop_length, c.n_mels)
        self.backbone = ConvNeXtEncoder(c.n_mels, c.backbone_depths, c.backbone_dims, c.backbone_kernel)
        self.quantizer = FSQQuantizer(c.quantizer_input_dim, c.n_groups * c.n_codebooks, c.levels, c.downsample_factor)
        self.head = HiFiGAN(c)

    @property
    def samples_per_frame(self) -> int:
        return self.config.hop_length * self.quantizer.factor

    @torch.no_grad()
    def encode(self, wave: Tensor) -> Tensor:
        """[B, S] at sample_rate -> codes [B, codebooks, S // samples_per_frame]."""
        mels = self.spec_transform(wave)
        return self.quantizer.encode(self.backbone(mels))

    @torch.no_grad()
    def decode(self, codes: Tensor) -> Tensor:
        """codes [B, codebooks, T] -> [B, T x samples_per_frame]."""
        return self.head(self.quantizer.decode(codes))[:, 0]
