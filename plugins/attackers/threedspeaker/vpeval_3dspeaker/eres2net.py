"""ERes2Net (Chen et al. 2023): a Res2Net with local (inside a block) and global (across stages) attentional fusion.

Rebuilt from 3D-Speaker's speakerlab/models/eres2net/ERes2Net.py, fusion.py and pooling_layers.py
(commit 09e7806), with the same module names, so its published state dicts (pretrained_eres2net.ckpt and
the base / large models) load with strict=True. `expansion`, `base_width` and `scale` are the constants
ERes2Net.py fixes (2, 32, 2) and ERes2Net_huge.py sets to (4, 24, 3); WeSpeaker's wespeaker/models/
eres2net.py (commit dfa7419) takes them as arguments and names the first branch of a fused block
conv2_1 / bn2_1 (vpeval_3dspeaker.checkpoint renames its keys). Inference only, in eval mode, with per-row
frame counts for zero-padded batches (vpeval_3dspeaker.masking). TSTP pooling only (the published one).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from vpeval_3dspeaker.masking import strided, time_mean, time_variance, zero_padding


def relu20(x: torch.Tensor) -> torch.Tensor:
    """ERes2Net's ReLU: Hardtanh(0, 20)."""
    return F.hardtanh(x, 0.0, 20.0)


class AFF(nn.Module):
    """Attentional feature fusion: x and y weighted by 1 + tanh and 1 - tanh of a 1x1 convolution of both."""

    def __init__(self, channels: int, r: int = 4):
        super().__init__()
        inter = int(channels // r)
        self.local_att = nn.Sequential(
            nn.Conv2d(channels * 2, inter, kernel_size=1, stride=1, padding=0),
            nn.BatchNorm2d(inter),
            nn.SiLU(),
            nn.Conv2d(inter, channels, kernel_size=1, stride=1, padding=0),
            nn.BatchNorm2d(channels),
        )

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        attention = 1.0 + torch.tanh(self.local_att(torch.cat((x, y), dim=1)))
        return x * attention + y * (2.0 - attention)


class Block(nn.Module):
    """BasicBlockERes2Net (fuse False: branches added) or BasicBlockERes2Net_diff_AFF (fuse True: AFF)."""

    def __init__(
        self, in_planes: int, planes: int, stride: int, base_width: int, scale: int, expansion: int, fuse: bool
    ):
        super().__init__()
        width = int(math.floor(planes * (base_width / 64.0)))
        self.conv1 = nn.Conv2d(in_planes, width * scale, kernel_size=1, stride=stride, bias=False)
        self.bn1 = nn.BatchNorm2d(width * scale)
        self.convs = nn.ModuleList(nn.Conv2d(width, width, kernel_size=3, padding=1, bias=False) for _ in range(scale))
        self.bns = nn.ModuleList(nn.BatchNorm2d(width) for _ in range(scale))
        if fuse:
            self.fuse_models = nn.ModuleList(AFF(width) for _ in range(scale - 1))
        self.conv3 = nn.Conv2d(width * scale, planes * expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * expansion)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, expansion * planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(expansion * planes),
            )
        self.width = width
        self.stride = stride
        self.fuse = fuse

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):
        lengths_out = strided(lengths, self.stride)
        out = relu20(self.bn1(self.conv1(x)))  # 1x1, strided: frame j is input frame stride * j
        pieces = torch.split(out, self.width, 1)
        branches = []
        sp = pieces[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns)):
            if i > 0:
                sp = self.fuse_models[i - 1](sp, pieces[i]) if self.fuse else sp + pieces[i]
            sp = relu20(bn(conv(zero_padding(sp, lengths_out))))
            branches.append(sp)
        out = self.bn3(self.conv3(torch.cat(branches, 1)))
        return relu20(out + self.shortcut(x)), lengths_out


class Stage(nn.Sequential):
    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None):  # type: ignore[override]
        for block in self:
            x, lengths = block(x, lengths)
        return x, lengths


class ERes2Net(nn.Module):
    """ERes2Net(feat_dim, embedding_size, m_channels, num_blocks, ...): fbank [B, T, F] -> [B, E]."""

    def __init__(
        self,
        feat_dim: int = 80,
        embedding_size: int = 192,
        m_channels: int = 32,
        num_blocks: tuple[int, int, int, int] = (3, 4, 6, 3),
        base_width: int = 32,
        scale: int = 2,
        expansion: int = 2,
        two_emb_layer: bool = False,
        pool_eps: float = 1e-8,
    ):
        super().__init__()
        self.in_planes = m_channels
        self.conv1 = nn.Conv2d(1, m_channels, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(m_channels)
        shape = (base_width, scale, expansion)
        self.layer1 = self._stage(m_channels, num_blocks[0], 1, *shape, fuse=False)
        self.layer2 = self._stage(m_channels * 2, num_blocks[1], 2, *shape, fuse=False)
        self.layer3 = self._stage(m_channels * 4, num_blocks[2], 2, *shape, fuse=True)
        self.layer4 = self._stage(m_channels * 8, num_blocks[3], 2, *shape, fuse=True)
        c = m_channels * expansion
        self.layer1_downsample = nn.Conv2d(c, c * 2, kernel_size=3, stride=2, padding=1, bias=False)
        self.layer2_downsample = nn.Conv2d(c * 2, c * 4, kernel_size=3, stride=2, padding=1, bias=False)
        self.layer3_downsample = nn.Conv2d(c * 4, c * 8, kernel_size=3, stride=2, padding=1, bias=False)
        self.fuse_mode12 = AFF(c * 2)
        self.fuse_mode123 = AFF(c * 4)
        self.fuse_mode1234 = AFF(c * 8)
        stats_dim = int(feat_dim / 8) * m_channels * 8 * expansion
        self.seg_1 = nn.Linear(stats_dim * 2, embedding_size)
        if two_emb_layer:
            self.seg_bn_1 = nn.BatchNorm1d(embedding_size, affine=False)
            self.seg_2 = nn.Linear(embedding_size, embedding_size)
        self.two_emb_layer = two_emb_layer
        self.pool_eps = pool_eps
        self.embedding_size = embedding_size

    def _stage(self, planes, blocks, stride, base_width, scale, expansion, fuse) -> Stage:
        layers = []
        for s in [stride] + [1] * (blocks - 1):
            layers.append(Block(self.in_planes, planes, s, base_width, scale, expansion, fuse))
            self.in_planes = planes * expansion
        return Stage(*layers)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """feats [B, T, F] (zero-padded after each row's `lengths` frames; None: all real) -> [B, E]."""
        x = feats.permute(0, 2, 1).unsqueeze(1)
        out = F.relu(self.bn1(self.conv1(x)))  # the stem's ReLU is torch's (the blocks' is capped at 20)
        out1, l1 = self.layer1(out, lengths)
        out2, l2 = self.layer2(out1, l1)
        fuse12 = self.fuse_mode12(out2, self.layer1_downsample(zero_padding(out1, l1)))
        out3, l3 = self.layer3(out2, l2)
        fuse123 = self.fuse_mode123(out3, self.layer2_downsample(zero_padding(fuse12, l2)))
        out4, l4 = self.layer4(out3, l3)
        fuse1234 = self.fuse_mode1234(out4, self.layer3_downsample(zero_padding(fuse123, l3)))
        mean = time_mean(fuse1234, l4).flatten(start_dim=1)
        std = torch.sqrt(time_variance(fuse1234, l4) + self.pool_eps).flatten(start_dim=1)
        embedding = self.seg_1(torch.cat((mean, std), 1))
        if self.two_emb_layer:
            embedding = self.seg_2(self.seg_bn_1(F.relu(embedding)))
        return embedding
