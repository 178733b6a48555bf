"""Building blocks shared by the codec and the content encoder (Fish-Speech's firefly family, as
StreamVoiceAnon's modules/vqgan uses them), written for inference.

Module attribute names follow the published modules so state-dict keys match: a causal convolution
keeps its torch layer in `.conv`, a ConvNeXt block has dwconv / norm / pwconv1 / pwconv2 / gamma, an
encoder has downsample_layers / stages / norm. Every convolution pads on the left only: output frame t
depends on input frames up to t (the codec and content encoder stream).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class CausalConv(nn.Module):
    """Conv1d with (dilated kernel - stride) zeros on the left (FishConvNet in modules/vqgan/modules/firefly.py)."""

    def __init__(self, cin: int, cout: int, kernel: int, dilation: int = 1, stride: int = 1, groups: int = 1):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, stride=stride, dilation=dilation, groups=groups)
        self.stride = stride
        self.span = (kernel - 1) * dilation + 1

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(F.pad(x, (self.span - self.stride, 0)))


class CausalTransConv(nn.Module):
    """ConvTranspose1d with the published firefly padding (FishTransConvNet in firefly.py): torch padding =
    stride, output_padding = stride % 2, and one zero frame on the left (kernel = 2 x stride) or on both
    sides (kernel = stride) before it."""

    def __init__(self, cin: int, cout: int, kernel: int, stride: int = 1):
        super().__init__()
        self.stride = stride
        self.kernel = kernel
        self.conv = nn.ConvTranspose1d(cin, cout, kernel, stride=stride, padding=stride, output_padding=stride % 2)

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == self.kernel // 2:
            x = F.pad(x, (1, 0))
        elif self.stride == self.kernel:
            x = F.pad(x, (1, 1))
        return self.conv(x)


class LayerNorm(nn.Module):
    """LayerNorm over channels, for [B, T, C] (channels_last) or [B, C, T] (channels_first)."""

    def __init__(self, dim: int, eps: float = 1e-6, channels_first: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps
        self.channels_first = channels_first

    def forward(self, x: Tensor) -> Tensor:
        if not self.channels_first:
            return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        mean = x.mean(1, keepdim=True)
        var = (x - mean).pow(2).mean(1, keepdim=True)
        return self.weight[:, None] * ((x - mean) / torch.sqrt(var + self.eps)) + self.bias[:, None]


class ConvNeXtBlock(nn.Module):
    """Depthwise causal conv, LayerNorm, pointwise MLP (GELU), layer scale `gamma`, residual."""

    def __init__(self, dim: int, kernel_size: int = 7, mlp_ratio: float = 4.0):
        super().__init__()
        self.dwconv = CausalConv(dim, dim, kernel_size, groups=dim)
        self.norm = LayerNorm(dim)
        self.pwconv1 = nn.Linear(dim, int(mlp_ratio * dim))
        self.pwconv2 = nn.Linear(int(mlp_ratio * dim), dim)
        self.gamma = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x: Tensor) -> Tensor:
        y = self.dwconv(x).transpose(1, 2)
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).transpose(1, 2)


class ConvNeXtEncoder(nn.Module):
    """The firefly backbone: stem (causal conv 7 + LayerNorm), stages of ConvNeXt blocks joined by
    LayerNorm + 1x1 conv, final LayerNorm; `g_in` (a 1x1 conv from a speaker vector) where gin_channels > 0."""

    def __init__(
        self,
        input_channels: int,
        depths: list[int],
        dims: list[int],
        kernel_size: int = 7,
        gin_channels: int = 0,
    ):
        super().__init__()
        self.downsample_layers = nn.ModuleList(
            [nn.Sequential(CausalConv(input_channels, dims[0], 7), LayerNorm(dims[0], channels_first=True))]
        )
        for i in range(len(depths) - 1):
            self.downsample_layers.append(
                nn.Sequential(LayerNorm(dims[i], channels_first=True), nn.Conv1d(dims[i], dims[i + 1], 1))
            )
        self.stages = nn.ModuleList(
            nn.Sequential(*[ConvNeXtBlock(dims[i], kernel_size) for _ in range(depths[i])]) for i in range(len(depths))
        )
        self.norm = LayerNorm(dims[-1], channels_first=True)
        self.g_in = nn.Conv1d(gin_channels, input_channels, 1) if gin_channels > 0 else None

    def forward(self, x: Tensor) -> Tensor:
        for down, stage in zip(self.downsample_layers, self.stages, strict=True):
            x = stage(down(x))
        return self.norm(x)


def downsampler(dim: int, factors: list[int]) -> nn.Sequential:
    """Time downsampling by each factor: causal strided conv + ConvNeXt block (the quantizers' `downsample`)."""
    return nn.Sequential(*[nn.Sequential(CausalConv(dim, dim, f, stride=f), ConvNeXtBlock(dim)) for f in factors])


class LogMel(nn.Module):
    """Fish-Speech's log-mel: (win - hop) zeros on the left, no centering, magnitude sqrt(re^2 + im^2 + 1e-6),
    slaney mel filters, log(clamp(., 1e-5)). Frame t covers samples up to (t + 1) x hop."""

    def __init__(self, sample_rate: int, n_fft: int, win_length: int, hop_length: int, n_mels: int):
        super().__init__()
        from torchaudio.functional import melscale_fbanks

        self.sample_rate, self.n_fft, self.win_length, self.hop_length = sample_rate, n_fft, win_length, hop_length
        self.register_buffer("window", torch.hann_window(win_length), persistent=False)
        fb = melscale_fbanks(
            n_fft // 2 + 1, 0.0, float(sample_rate // 2), n_mels, sample_rate, norm="slaney", mel_scale="slaney"
        )
        self.register_buffer("fb", fb, persistent=False)

    def forward(self, wave: Tensor) -> Tensor:
        wave = F.pad(wave, (self.win_length - self.hop_length, 0))
        spec = torch.stft(
            wave.float(),
            self.n_fft,
            hop_length=self.hop_length,
            win_length=self.win_length,
            window=self.window,
            center=False,
            return_complex=True,
        )
        spec = torch.view_as_real(spec)
        magnitude = torch.sqrt(spec.pow(2).sum(-1) + 1e-6)
        mel = torch.matmul(magnitude.transpose(-1, -2), self.fb).transpose(-1, -2)
        return torch.log(torch.clamp(mel, min=1e-5))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return y.type_as(x) * self.weight


class SwiGLU(nn.Module):
    """w2(silu(w1 x) * w3 x): the transformers' feed_forward."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def rotary_table(length: int, head_dim: int, base: float) -> Tensor:
    """[length, head_dim / 2, 2] cos/sin, rounded through bfloat16 as the published models store them."""
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(length).float(), inv)
    table = torch.stack([torch.cos(angles), torch.sin(angles)], dim=-1)
    return table.to(torch.bfloat16).float()


def apply_rotary(x: Tensor, table: Tensor) -> Tensor:
    """x [B, T, H, D] rotated pairwise by table [T, D/2, 2] (interleaved pairs, as gpt-fast)."""
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    t = table.view(1, xs.shape[1], 1, xs.shape[3], 2)
    out = torch.stack(
        [xs[..., 0] * t[..., 0] - xs[..., 1] * t[..., 1], xs[..., 1] * t[..., 0] + xs[..., 0] * t[..., 1]], -1
    )
    return out.flatten(3).type_as(x)


def frames_for(samples: int, hop: int, factor: int) -> int:
    """Token frames of `samples` samples: mel frames (samples // hop) over the time downsampling factor."""
    return (samples // hop) // factor


def prod(values: list[int]) -> int:
    return int(math.prod(values))
