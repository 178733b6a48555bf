"""Recursive joint cross-attention over the N utterances of a side (seed 000, III-B5; Praveen and Alam).

Audio and text sequences (one vector per utterance) pass through modality-specific BiLSTMs (the
global-text variant repeats one speaker-level text vector and skips the text BiLSTM); each joint
cross-attention layer correlates each modality with the joint [audio ‖ text] sequence,
C_m = tanh(X_m W_jm J^T / sqrt(d)), turns the correlations into attention maps
H_m = ReLU(X_m W_m + (C_m J / N) W_cm) and adds them back, X_m <- H_m W_hm + X_m; the layers are applied
recursively, each on the previous one's output. The attended sequences are concatenated, pooled and
projected to the speaker embedding.

Pooling (`rjca_pooling`): seed 000 gives RJCA "four attention heads" and no pooling; vpeval's default pools
with a learnable 4-head query (the query-attention module, tau 1). Reference [18]'s published speaker
verification code (praveena2j/RJCAforSpeakerVerification, models/avmodels.py `FusionModel`) pools with
attentive statistics pooling and a linear layer: `rjca_pooling: asp`.

Deviation: the original maps the L x L correlation matrix with a weight of size k x L, which ties the
model to one sequence length; here the correlations weight the joint features (C_m J / N), so one
model serves N = 5, 10 and 15.
"""

from __future__ import annotations

import torch
from torch import nn

from vpeval_multiutt.audio_model import QueryAttention


class JointCrossAttention(nn.Module):
    def __init__(self, dim: int, hidden: int, dropout: float):
        super().__init__()
        joint = 2 * dim
        self.scale = joint**0.5
        self.correlate = nn.ModuleList([nn.Linear(joint, dim, bias=False) for _ in range(2)])  # W_ja, W_jt
        self.own = nn.ModuleList([nn.Linear(dim, hidden, bias=False) for _ in range(2)])  # W_a, W_t
        self.cross = nn.ModuleList([nn.Linear(joint, hidden, bias=False) for _ in range(2)])  # W_ca, W_ct
        self.back = nn.ModuleList([nn.Linear(hidden, dim, bias=False) for _ in range(2)])  # W_ha, W_ht
        self.dropout = nn.Dropout(dropout)

    def forward(self, audio: torch.Tensor, text: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """[B, N, dim] each -> attended [B, N, dim] each."""
        joint = torch.cat([audio, text], dim=-1)
        out = []
        for m, x in enumerate((audio, text)):
            correlation = torch.tanh(x @ self.correlate[m](joint).transpose(1, 2) / self.scale)  # [B, N, N]
            attended = correlation @ joint / joint.shape[1]
            h = self.dropout(torch.relu(self.own[m](x) + self.cross[m](attended)))
            out.append(self.back[m](h) + x)
        return out[0], out[1]


class Rjca(nn.Module):
    """Per-utterance audio [B, N, D_a] and text [B, N, D_t] (or a repeated global text vector) -> [B, out]."""

    def __init__(
        self,
        audio_dim: int,
        text_dim: int,
        hidden: int,
        recurrent_layers: int,
        fusion_layers: int,
        heads: int,
        dropout: float,
        out: int,
        global_text: bool,
        pooling: str = "query",
    ):
        super().__init__()
        if hidden % 2:
            raise ValueError(f"rjca_dim {hidden} must be even (two LSTM directions)")
        lstm = dict(
            hidden_size=hidden // 2,
            num_layers=recurrent_layers,
            bidirectional=True,
            batch_first=True,
            dropout=dropout if recurrent_layers > 1 else 0.0,
        )
        self.audio = nn.LSTM(audio_dim, **lstm)
        self.text = nn.Linear(text_dim, hidden) if global_text else nn.LSTM(text_dim, **lstm)
        self.layers = nn.ModuleList([JointCrossAttention(hidden, hidden, dropout) for _ in range(fusion_layers)])
        if pooling == "asp":  # [18]: attentive statistics (weighted mean and std) over the N positions
            from speechbrain.lobes.models.ECAPA_TDNN import AttentiveStatisticsPooling

            self.asp = AttentiveStatisticsPooling(2 * hidden, attention_channels=hidden)
            self.out = nn.Linear(4 * hidden, out)
        else:
            self.pool = QueryAttention(2 * hidden, heads, temperature=1.0)
            self.out = nn.Linear(2 * hidden, out)
        self.pooling = pooling

    def _pool(self, joint: torch.Tensor) -> torch.Tensor:
        """[B, N, 2 hidden] -> [B, 2 hidden] (query) or [B, 4 hidden] (asp: mean and std)."""
        if self.pooling == "asp":
            return self.asp(joint.transpose(1, 2)).squeeze(-1)
        return self.pool(joint)

    def forward(self, audio: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        a, _ = self.audio(audio)
        t = self.text(text) if isinstance(self.text, nn.Linear) else self.text(text)[0]
        for layer in self.layers:
            a, t = layer(a, t)
        return self.out(self._pool(torch.cat([a, t], dim=-1)))
