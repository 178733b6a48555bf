"""SSL-Whisper cross-attention over the N utterances of a side (seed 000, III-B6).

Each utterance's ECAPA frame map gets a learnable embedding of its position in the set (utterances
are sampled, not contiguous, so only utterance-level positions: a label telling the attention which
frames belong to one utterance). Training draws each batch's labels at random among all
`max_utterances` (`training_positions`), so that every embedding a side of up to that many utterances
uses at test time has been trained, not only the first N of the training sides. The frames of the N utterances are
concatenated in time, contextualised by self-attention, then refined by cross-attention with the
ECAPA frames as queries and the same utterances' Whisper frames as keys and values, and pooled by
attentive statistics pooling into the speaker embedding.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def training_positions(n: int, max_utterances: int, rng: np.random.Generator) -> torch.Tensor:
    """n distinct utterance-position labels drawn from range(max_utterances), for one training batch."""
    return torch.from_numpy(rng.choice(max_utterances, size=n, replace=False).astype(np.int64))


class SslWhisper(nn.Module):
    def __init__(
        self,
        frame_dim: int,
        whisper_dim: int,
        dim: int,
        heads: int,
        max_utterances: int,
        attention_channels: int,
        out: int,
    ):
        super().__init__()
        from speechbrain.lobes.models.ECAPA_TDNN import AttentiveStatisticsPooling

        self.max_utterances = max_utterances
        self.frames = nn.Linear(frame_dim, dim)
        self.whisper = nn.Linear(whisper_dim, dim)
        self.position = nn.Embedding(max_utterances, dim)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.cross_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm_self = nn.LayerNorm(dim)
        self.norm_cross = nn.LayerNorm(dim)
        self.pool = AttentiveStatisticsPooling(dim, attention_channels=attention_channels)
        self.out = nn.Linear(2 * dim, out)

    def forward(
        self,
        frames: torch.Tensor,
        frame_positions: torch.Tensor,
        whisper: torch.Tensor,
        whisper_positions: torch.Tensor,
    ) -> torch.Tensor:
        """frames [B, L, C] with utterance indices [L]; whisper [B, Lw, W] with indices [Lw] -> [B, out]."""
        x = self.frames(frames) + self.position(frame_positions)
        x = self.norm_self(x + self.self_attention(x, x, x, need_weights=False)[0])
        w = self.whisper(whisper) + self.position(whisper_positions)
        x = self.norm_cross(x + self.cross_attention(x, w, w, need_weights=False)[0])
        return self.out(self.pool(x.transpose(1, 2)).squeeze(-1))
