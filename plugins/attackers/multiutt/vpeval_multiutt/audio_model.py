"""ECAPA-TDNN split at attentive statistics pooling, and the three audio aggregations of seed 000.

speechbrain's ECAPA_TDNN is reused as is; `frame_map` runs its blocks and multi-layer feature
aggregation (the frame representations "before ASP", III-B) and `pool` runs ASP, its batch norm and
the final linear layer, so frame-level aggregation can pool frames of several utterances at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from vpeval_torch.ecapa import ecapa_tdnn, frame_map
from vpeval_torch.json_config import JsonConfig


@dataclass(frozen=True)
class AudioConfig(JsonConfig):
    """What it takes to rebuild the audio network; stored next to its weights."""

    frame_dim: int
    channels: tuple[int, ...]
    attention_channels: int
    embedding_dim: int


class FrameEncoder(nn.Module):
    """ECAPA-TDNN over frozen frames: frames [B, T, F] -> frame map [B, C, T] -> embedding [B, D]."""

    def __init__(self, config: AudioConfig):
        super().__init__()
        self.ecapa = ecapa_tdnn(config.frame_dim, config.channels, config.attention_channels, config.embedding_dim)

    def frame_map(self, frames: torch.Tensor) -> torch.Tensor:
        """The ECAPA blocks and MFA (speechbrain's forward up to ASP), unpadded input."""
        return frame_map(self.ecapa, frames)

    def pool(self, frame_map: torch.Tensor) -> torch.Tensor:
        """ASP over all frames of each row, then batch norm and the embedding layer: [B, C, T] -> [B, D]."""
        x = self.ecapa.asp_bn(self.ecapa.asp(frame_map))
        return self.ecapa.fc(x).squeeze(-1)

    def forward(self, frames: torch.Tensor) -> torch.Tensor:
        return self.pool(self.frame_map(frames))

    # -- padded batches (inference on many utterances at once) ---------------------------------

    def frame_map_padded(self, frames: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Zero-padded frames [B, T, F] with true lengths [B] -> frame maps [B, C, T]; each row's first
        `lengths` frames equal `frame_map` of that utterance alone (the rest is junk).

        Two things make the padded rows exact: the SE blocks' means see only the real frames
        (speechbrain's lengths), and before every 'same' convolution each shorter row's first p padding
        frames are overwritten with the reflection of its own last frames, which is what the convolution's
        reflect padding reads when the row runs alone (p = dilation x (kernel - 1) / 2)."""
        from speechbrain.lobes.models.ECAPA_TDNN import TDNNBlock
        from speechbrain.nnet.CNN import Conv1d

        convolutions = [
            m for m in self.ecapa.modules() if isinstance(m, Conv1d) and m.padding == "same" and m.kernel_size > 1
        ]
        # Room for every row's reflected tail inside the tensor (else the batch's own reflect padding at its
        # end would read the tails of rows just shorter than it): p_max more zero frames, cut off at the end.
        room = max((m.dilation * (m.kernel_size - 1) // 2 for m in convolutions), default=0)
        total = frames.shape[1]
        frames = torch.nn.functional.pad(frames, (0, 0, 0, room))
        relative = _relative(lengths, frames.shape[1])
        hooks = [m.register_forward_pre_hook(_reflect_tails(lengths)) for m in convolutions]
        try:
            x = frames.transpose(1, 2)
            outputs = []
            for block in self.ecapa.blocks:
                x = block(x) if isinstance(block, TDNNBlock) else block(x, lengths=relative)
                outputs.append(x)
            return self.ecapa.mfa(torch.cat(outputs[1:], dim=1))[:, :, :total]
        finally:
            for hook in hooks:
                hook.remove()

    def pool_padded(self, frame_map: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """ASP over each row's first `lengths` frames only, batch norm, embedding layer: [B, C, T] -> [B, D]."""
        x = self.ecapa.asp_bn(self.ecapa.asp(frame_map, lengths=_relative(lengths, frame_map.shape[2])))
        return self.ecapa.fc(x).squeeze(-1)


def _reflect_tails(lengths: torch.Tensor):
    """A forward pre-hook for a speechbrain Conv1d (input [B, C, T]): rows shorter than T get, at frames
    L .. L+p-1, their reflection x[L-2], x[L-3], ... (torch's reflect padding of a row of length L)."""

    def hook(module, args):
        (x,) = args
        if not module.skip_transpose:  # speechbrain's [B, T, C] convention
            raise ValueError("padded ECAPA batches expect the channels-first convolutions ECAPA-TDNN builds")
        pad = module.dilation * (module.kernel_size - 1) // 2
        t = x.shape[-1]
        index = torch.arange(t, device=x.device).expand(len(x), t)
        ends = lengths.to(x.device).unsqueeze(1)
        tail = (index >= ends) & (index < ends + pad)
        source = torch.where(tail, 2 * (ends - 1) - index, index).clamp(0, t - 1)
        return (x.gather(2, source.unsqueeze(1).expand(-1, x.shape[1], -1)),)

    return hook


def _relative(lengths: torch.Tensor, total: int) -> torch.Tensor:
    """speechbrain's relative lengths; half a frame short, so that its `arange < length * T` mask keeps
    exactly the real frames whatever the float rounding of length / T * T."""
    return (lengths.to(torch.float32) - 0.5) / total


def side_mean(vectors: torch.Tensor, unit: bool) -> torch.Tensor:
    """[N, D] -> [D]: the mean of the vectors (the paper's mean pooling), or of their unit vectors."""
    return (nn.functional.normalize(vectors, dim=-1) if unit else vectors).mean(dim=0)


class QueryAttention(nn.Module):
    """A learnable query q over N utterance embeddings: z = MHA(q / tau, X, X) (III-A1)."""

    def __init__(self, dim: int, heads: int, temperature: float):
        super().__init__()
        self.temperature = temperature
        self.query = nn.Parameter(torch.randn(dim) / dim**0.5)
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        """[B, N, D] -> [B, D]."""
        query = (self.query / self.temperature).expand(embeddings.shape[0], 1, -1)
        out, _ = self.attention(query, embeddings, embeddings, need_weights=False)
        return out.squeeze(1)


class AudioModel(nn.Module):
    """An ECAPA-TDNN with one of the aggregations: mean, query-attention or frame-concat."""

    def __init__(self, config: AudioConfig, aggregation: str, heads: int, temperature: float, unit_mean: bool = False):
        super().__init__()
        self.config = config
        self.aggregation = aggregation
        self.unit_mean = unit_mean  # mean_pooling: unit-embeddings (not a weight: a scoring choice)
        self.encoder = FrameEncoder(config)
        self.query = (
            QueryAttention(config.embedding_dim, heads, temperature) if aggregation == "query-attention" else None
        )

    def utterance_embeddings(self, frames: torch.Tensor) -> torch.Tensor:
        """[B, T, F] -> [B, D]."""
        return self.encoder(frames)

    def training_embeddings(self, frames: torch.Tensor, n: int) -> tuple[torch.Tensor, int]:
        """Frames of speakers x N equal-length crops [B*N, T, F] -> (embeddings, rows per speaker).

        mean trains on single utterances (the paper's no-aggregation baseline, 64 utterances a batch), so
        it returns one row per utterance; the aggregations return one row per speaker.
        """
        if self.aggregation == "mean":
            return self.encoder(frames), n
        if self.aggregation == "query-attention":
            utts = self.encoder(frames)
            return self.query(utts.view(-1, n, utts.shape[-1])), 1
        maps = self.encoder.frame_map(frames)  # [B*N, C, T]
        b, c, t = maps.shape[0] // n, maps.shape[1], maps.shape[2]
        joined = maps.view(b, n, c, t).permute(0, 2, 1, 3).reshape(b, c, n * t)
        return self.encoder.pool(joined), 1

    def side_embedding(self, frames: list[torch.Tensor]) -> torch.Tensor:
        """One trial side, N utterances of any lengths (each [T_i, F]) -> [D]."""
        if self.aggregation == "frame-concat":
            maps = [self.encoder.frame_map(f[None]) for f in frames]
            return self.encoder.pool(torch.cat(maps, dim=2))[0]
        return self.aggregate(torch.cat([self.encoder(f[None]) for f in frames]))

    def aggregate(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Utterance-level aggregation of one side's utterance embeddings [N, D] -> [D]: the query, or the mean
        (IV-B: the baseline "aggregates ... utterance embeddings using mean pooling"; unit_mean: of their
        unit vectors)."""
        if self.aggregation == "query-attention":
            return self.query(embeddings[None])[0]
        return side_mean(embeddings, self.unit_mean)
