"""Hybrid acoustic-textual speaker verification (seed 000, III-B4).

Text tokens attend to the acoustic frames of the same utterance: Q = E W_Q, K = H W_K, V = H W_V,
A = softmax(Q K^T / sqrt(d_k)) over frames, V~ = A V; Z = [E || V~] is projected to d_h, passed through
one Transformer encoder layer and mean-pooled over the real (non-padding, non-special) tokens; the
pooled vector and a projection of the utterance's authorship vector are concatenated and projected to
the speaker embedding.
"""

from __future__ import annotations

import torch
from torch import nn


class TokenToFrameAttention(nn.Module):
    """Multi-head attention with tokens as queries and frames as keys and values (d_k = d_v = `dim`)."""

    def __init__(self, token_dim: int, frame_dim: int, dim: int, heads: int):
        super().__init__()
        if dim % heads:
            raise ValueError(f"hybrid attention size {dim} must be a multiple of its {heads} heads")
        self.heads = heads
        self.query = nn.Linear(token_dim, dim, bias=False)
        self.key = nn.Linear(frame_dim, dim, bias=False)
        self.value = nn.Linear(frame_dim, dim, bias=False)

    def forward(self, tokens: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        """tokens [B, L, D_e], frames [B, T, C] -> token-conditioned acoustics [B, L, dim]."""
        b, length, _ = tokens.shape
        split = lambda x: x.view(b, x.shape[1], self.heads, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(tokens)), split(self.key(frames)), split(self.value(frames))
        weights = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)  # over frames
        return (weights @ v).transpose(1, 2).reshape(b, length, -1)


class HybridFusion(nn.Module):
    """Per utterance: (token states, real-token mask, frame map, authorship vector) -> speaker embedding."""

    def __init__(
        self, token_dim: int, frame_dim: int, text_dim: int, attention_dim: int, heads: int, hybrid_dim: int, out: int
    ):
        super().__init__()
        self.cross = TokenToFrameAttention(token_dim, frame_dim, attention_dim, heads)
        self.mix = nn.Linear(token_dim + attention_dim, hybrid_dim)  # W_f
        self.encoder = nn.TransformerEncoderLayer(hybrid_dim, heads, dim_feedforward=2 * hybrid_dim, batch_first=True)
        self.luar = nn.Linear(text_dim, hybrid_dim)  # W_luar
        self.out = nn.Linear(2 * hybrid_dim, out)  # W_o

    def forward(
        self,
        tokens: torch.Tensor,
        padding: torch.Tensor,
        real: torch.Tensor,
        frame_map: torch.Tensor,
        authorship: torch.Tensor,
    ) -> torch.Tensor:
        """tokens [B, L, D_e]; padding/real [B, L] bool; frame_map [B, C, T]; authorship [B, text_dim] -> [B, out]."""
        attended = self.cross(tokens, frame_map.transpose(1, 2))
        z = self.encoder(self.mix(torch.cat([tokens, attended], dim=-1)), src_key_padding_mask=padding)
        weight = real.unsqueeze(-1).to(z.dtype)
        pooled = (z * weight).sum(1) / weight.sum(1).clamp(min=1.0)
        return self.out(torch.cat([pooled, self.luar(authorship)], dim=-1))
