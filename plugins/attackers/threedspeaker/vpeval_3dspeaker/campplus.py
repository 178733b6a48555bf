"""CAM++ (Wang et al. 2023): an FCM 2-D front, a densely connected TDNN with context-aware masking, stats pooling.

Rebuilt from 3D-Speaker's speakerlab/models/campplus/DTDNN.py and layers.py (commit 09e7806), with the
same module names, so its published state dicts (campplus_voxceleb.bin, campplus_cn_common.bin) load
with strict=True; WeSpeaker's wespeaker/models/campplus.py (commit dfa7419) has the same names (its
TSTP pooling adds 1e-7 under the square root: `pool_eps`). Inference only, in eval mode: the forward
passes take per-row frame counts so that zero-padded batches give each utterance its own numbers
(vpeval_3dspeaker.masking). The published configuration is `batchnorm-relu` throughout, blocks of
(12, 24, 16) layers with kernel 3 and dilations (1, 2, 2), and a 32-channel FCM.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from vpeval_3dspeaker.masking import segment_means, strided, time_mean, time_variance, zero_padding

BLOCKS = ((12, 3, 1), (24, 3, 2), (16, 3, 2))  # (layers, kernel, dilation) of the three dense blocks
FCM_CHANNELS = 32


def batchnorm_relu(channels: int) -> nn.Sequential:
    """get_nonlinear('batchnorm-relu'): the keys batchnorm.*"""
    return nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(channels)), ("relu", nn.ReLU())]))


class BasicResBlock(nn.Module):
    """The FCM's residual block; its stride works on frequency only (time keeps every frame)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=(stride, 1), padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=(stride, 1), bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(zero_padding(x, lengths))))
        out = self.bn2(self.conv2(zero_padding(out, lengths)))
        return F.relu(out + self.shortcut(x))


class FCM(nn.Module):
    """[B, F, T] fbank -> [B, 32 * F // 8, T]: 2-D convolutions over frequency and time."""

    def __init__(self, feat_dim: int, m_channels: int = FCM_CHANNELS):
        super().__init__()
        self.conv1 = nn.Conv2d(1, m_channels, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(m_channels)
        self.layer1 = nn.Sequential(BasicResBlock(m_channels, m_channels, 2), BasicResBlock(m_channels, m_channels))
        self.layer2 = nn.Sequential(BasicResBlock(m_channels, m_channels, 2), BasicResBlock(m_channels, m_channels))
        self.conv2 = nn.Conv2d(m_channels, m_channels, kernel_size=3, stride=(2, 1), padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(m_channels)
        self.out_channels = m_channels * (feat_dim // 8)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x.unsqueeze(1))))  # the input's padding is zero already
        for block in (*self.layer1, *self.layer2):
            out = block(out, lengths)
        out = F.relu(self.bn2(self.conv2(zero_padding(out, lengths))))
        return out.reshape(out.shape[0], out.shape[1] * out.shape[2], out.shape[3])


class TDNNLayer(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int):
        super().__init__()
        padding = (kernel_size - 1) // 2
        self.linear = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=False)
        self.nonlinear = batchnorm_relu(out_channels)
        self.stride = stride

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):
        return self.nonlinear(self.linear(zero_padding(x, lengths))), strided(lengths, self.stride)


class CAMLayer(nn.Module):
    """The local convolution, scaled by a sigmoid mask from the utterance mean plus 100-frame segment means."""

    def __init__(self, bn_channels: int, out_channels: int, kernel_size: int, dilation: int, reduction: int = 2):
        super().__init__()
        padding = (kernel_size - 1) // 2 * dilation
        self.linear_local = nn.Conv1d(
            bn_channels, out_channels, kernel_size, padding=padding, dilation=dilation, bias=False
        )
        self.linear1 = nn.Conv1d(bn_channels, bn_channels // reduction, 1)
        self.linear2 = nn.Conv1d(bn_channels // reduction, out_channels, 1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        y = self.linear_local(zero_padding(x, lengths))
        context = time_mean(x, lengths).unsqueeze(-1) + segment_means(x, lengths)
        mask = torch.sigmoid(self.linear2(F.relu(self.linear1(context))))
        return y * mask


class CAMDenseTDNNLayer(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, bn_channels: int, kernel_size: int, dilation: int):
        super().__init__()
        self.nonlinear1 = batchnorm_relu(in_channels)
        self.linear1 = nn.Conv1d(in_channels, bn_channels, 1, bias=False)
        self.nonlinear2 = batchnorm_relu(bn_channels)
        self.cam_layer = CAMLayer(bn_channels, out_channels, kernel_size, dilation)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        return self.cam_layer(self.nonlinear2(self.linear1(self.nonlinear1(x))), lengths)


class CAMDenseTDNNBlock(nn.ModuleList):
    """Dense connections: every layer's output is appended to its input (keys tdnnd1, tdnnd2, ...)."""

    def __init__(self, layers: int, in_channels: int, growth: int, bn_channels: int, kernel_size: int, dilation: int):
        super().__init__()
        for i in range(layers):
            layer = CAMDenseTDNNLayer(in_channels + i * growth, growth, bn_channels, kernel_size, dilation)
            self.add_module(f"tdnnd{i + 1}", layer)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):
        for layer in self:
            x = torch.cat([x, layer(x, lengths)], dim=1)
        return x, lengths


class TransitLayer(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.nonlinear = batchnorm_relu(in_channels)
        self.linear = nn.Conv1d(in_channels, out_channels, 1, bias=False)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):
        return self.linear(self.nonlinear(x)), lengths


class StatsPool(nn.Module):
    """Mean and unbiased standard deviation over time; sqrt(var + eps), eps 0 in 3D-Speaker, 1e-7 in WeSpeaker."""

    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):
        return torch.cat([time_mean(x, lengths), torch.sqrt(time_variance(x, lengths) + self.eps)], dim=-1), lengths


class DenseLayer(nn.Module):
    """The embedding layer: a 1x1 convolution and a batch norm without affine parameters (keys batchnorm.*)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.linear = nn.Conv1d(in_channels, out_channels, 1, bias=False)
        self.nonlinear = nn.Sequential(OrderedDict([("batchnorm", nn.BatchNorm1d(out_channels, affine=False))]))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):
        return self.nonlinear(self.linear(x.unsqueeze(-1)).squeeze(-1)), lengths


class Activation(nn.Sequential):
    """out_nonlinear: frame-wise batch norm and ReLU, called with the frame counts like its neighbours."""

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):  # type: ignore[override]
        return super().forward(x), lengths


class CAMPPlus(nn.Module):
    """CAMPPlus(feat_dim, embedding_size, growth_rate, bn_size, init_channels): fbank [B, T, F] -> [B, E]."""

    def __init__(
        self,
        feat_dim: int = 80,
        embedding_size: int = 512,
        growth_rate: int = 32,
        bn_size: int = 4,
        init_channels: int = 128,
        pool_eps: float = 0.0,
    ):
        super().__init__()
        self.head = FCM(feat_dim)
        self.xvector = nn.Sequential(OrderedDict([("tdnn", TDNNLayer(self.head.out_channels, init_channels, 5, 2))]))
        channels = init_channels
        for i, (layers, kernel_size, dilation) in enumerate(BLOCKS):
            block = CAMDenseTDNNBlock(layers, channels, growth_rate, bn_size * growth_rate, kernel_size, dilation)
            self.xvector.add_module(f"block{i + 1}", block)
            channels += layers * growth_rate
            self.xvector.add_module(f"transit{i + 1}", TransitLayer(channels, channels // 2))
            channels //= 2
        out = Activation(OrderedDict([("batchnorm", nn.BatchNorm1d(channels)), ("relu", nn.ReLU())]))
        self.xvector.add_module("out_nonlinear", out)
        self.xvector.add_module("stats", StatsPool(pool_eps))
        self.xvector.add_module("dense", DenseLayer(channels * 2, embedding_size))
        self.embedding_size = embedding_size

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """feats [B, T, F] (zero-padded after each row's `lengths` frames; None: all real) -> [B, E]."""
        x = self.head(feats.permute(0, 2, 1), lengths)
        for layer in self.xvector:
            x, lengths = layer(x, lengths)
        return x
