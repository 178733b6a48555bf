"""SpInv's networks (seed 002, section III-C and IV): AuB, the projection head, the DINO head.

AuB: per-codebook token embeddings sized from the frontend's codebook count and vocabulary sizes,
summed per frame; continuous features fused by a one-layer MLP; a CLS token; a BERT-style
Transformer encoder (hidden d_h); the CLS output h projected to d_a (512), the AuB output o.
G = AuB + projection head (o -> d_z, the target encoder's dimension).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Layout:
    """What a frontend exposes: codebook sizes (empty: no tokens) and feature size (0: no features)."""

    codebook_sizes: tuple[int, ...]
    feature_dim: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Sizes:
    hidden: int = 384  # d_h
    layers: int = 6
    heads: int = 6
    output: int = 512  # d_a
    target: int = 192  # d_z
    max_frames: int = 512
    dropout: float = 0.1
    projection_layers: int = 2  # the paper's text gives no depth (section IV)


@dataclass
class FrameBatch:
    """A padded batch of frontend outputs: tokens [B, N, Q] (int64), features [B, N, D], mask [B, N] (True = frame)."""

    tokens: torch.Tensor | None
    features: torch.Tensor | None
    mask: torch.Tensor


class AuB(nn.Module):
    """Audio BERT: frames -> CLS representation h [B, d_h] and AuB output o [B, d_a]."""

    def __init__(self, layout: Layout, sizes: Sizes):
        super().__init__()
        self.layout = layout
        d = sizes.hidden
        if layout.codebook_sizes:
            # one table holding every codebook's rows; offsets pick codebook q's block
            offsets = torch.tensor([0, *torch.tensor(layout.codebook_sizes).cumsum(0)[:-1].tolist()], dtype=torch.long)
            self.register_buffer("offsets", offsets, persistent=False)
            self.token_embedding = nn.Embedding(int(sum(layout.codebook_sizes)), d)
        if layout.feature_dim:
            tokens_in = d if layout.codebook_sizes else 0
            self.feature_norm = nn.LayerNorm(layout.feature_dim)
            self.fusion = nn.Sequential(nn.Linear(tokens_in + layout.feature_dim, d), nn.GELU())
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.position = nn.Embedding(sizes.max_frames + 1, d)
        self.input_norm = nn.LayerNorm(d)
        self.dropout = nn.Dropout(sizes.dropout)
        layer = nn.TransformerEncoderLayer(
            d, sizes.heads, 4 * d, sizes.dropout, activation="gelu", batch_first=True, norm_first=False
        )
        self.encoder = nn.TransformerEncoder(layer, sizes.layers, enable_nested_tensor=False)
        self.output = nn.Linear(d, sizes.output)
        self.max_frames = sizes.max_frames
        nn.init.normal_(self.cls, std=0.02)

    def frames(self, batch: FrameBatch) -> torch.Tensor:
        parts = None
        if self.layout.codebook_sizes:
            parts = self.token_embedding(batch.tokens + self.offsets).sum(dim=2)  # sum over codebooks
        if self.layout.feature_dim:
            features = self.feature_norm(batch.features)
            parts = self.fusion(features if parts is None else torch.cat([parts, features], dim=-1))
        return parts

    def forward(self, batch: FrameBatch) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.frames(batch)
        n = x.shape[1]
        if n > self.max_frames:
            raise ValueError(f"AuB takes at most {self.max_frames} frames, got {n}")
        x = torch.cat([self.cls.expand(len(x), -1, -1), x], dim=1)
        x = x + self.position(torch.arange(n + 1, device=x.device))[None]
        x = self.dropout(self.input_norm(x))
        keep = torch.cat([torch.ones_like(batch.mask[:, :1]), batch.mask], dim=1)
        h = self.encoder(x, src_key_padding_mask=~keep)[:, 0]
        return h, self.output(h)


def projection_head(sizes: Sizes) -> nn.Module:
    """o (d_a) -> ẑ (d_z): an MLP of `projection_layers` linear layers (GELU between; 1: one linear map).

    Section IV: "The feature fusion layer uses a one-layer MLP" (AuB's `fusion`, above) and "The projection
    head maps this 512-dimensional output to d_z": its depth is not in the text; the default is two layers."""
    layers: list[nn.Module] = []
    for _ in range(sizes.projection_layers - 1):
        layers += [nn.Linear(sizes.output, sizes.output), nn.GELU()]
    return nn.Sequential(*layers, nn.Linear(sizes.output, sizes.target))


class DinoHead(nn.Module):
    """DINO's head (Caron et al. 2021): MLP -> bottleneck -> L2 norm -> weight-normalised prototypes (K).

    The prototypes' gain is fixed at 1, as DINO's default (`norm_last_layer`): logits are cosines. Left
    trainable from the linear layer's initial norm (about 0.58 for a 256-d bottleneck), the logits stay
    so small that the student's distribution starts, and stayed in our runs, near uniform (loss ln K).
    """

    def __init__(self, in_dim: int, hidden: int, bottleneck: int, prototypes: int):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, bottleneck))
        self.prototypes = nn.utils.parametrizations.weight_norm(nn.Linear(bottleneck, prototypes, bias=False))
        gain = self.prototypes.parametrizations.weight.original0
        with torch.no_grad():
            gain.fill_(1.0)
        gain.requires_grad_(False)

    def forward(self, o: torch.Tensor) -> torch.Tensor:
        return self.prototypes(F.normalize(self.mlp(o), dim=-1))


class Recovery(nn.Module):
    """G_theta = AuB + projection head; also returns h and o for the losses."""

    def __init__(self, layout: Layout, sizes: Sizes):
        super().__init__()
        self.aub = AuB(layout, sizes)
        self.head = projection_head(sizes)

    def forward(self, batch: FrameBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h, o = self.aub(batch)
        return self.head(o), h, o
