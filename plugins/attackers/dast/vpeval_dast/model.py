"""The dual-stream network (paper section 2.1): streams, frame encoders, fusion, pooling, embedding.

Fbank frames (100/s) and weighted-sum SSL frames (50/s) have different rates: where they meet (raw
concatenation, mid-level product) the SSL side is linearly interpolated to the Fbank frame count.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from vpeval_torch.ecapa import ecapa_tdnn, frame_map
from vpeval_torch.json_config import JsonConfig


@dataclass(frozen=True)
class NetworkConfig(JsonConfig):
    """What it takes to rebuild the trainable network; stored next to its weights."""

    fusion: str  # fbank | ssl | raw | mid
    n_mels: int
    ssl_layers: int  # 0 without an SSL stream
    ssl_dim: int
    channels: tuple[int, ...]
    attention_channels: int
    embedding_dim: int


class LayerWeightedSum(torch.nn.Module):
    """H = sum_l w_l h_l with w = softmax(learnable logits): the SSL stream's layer aggregation."""

    def __init__(self, layers: int):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.zeros(layers))

    @property
    def weights(self) -> torch.Tensor:
        return torch.softmax(self.logits, dim=0)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden [L, B, T, D] -> [B, T, D]."""
        return torch.einsum("l,lbtd->btd", self.weights, hidden)


class FrameEncoder(torch.nn.Module):
    """SpeechBrain's ECAPA-TDNN up to its multi-layer aggregation: [B, T, F] -> frame features [B, C, T]."""

    def __init__(self, input_size: int, channels: tuple[int, ...], attention_channels: int):
        super().__init__()
        ecapa = ecapa_tdnn(input_size, channels, attention_channels)
        self.blocks, self.mfa = ecapa.blocks, ecapa.mfa  # pooling and embedding come after fusion

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return frame_map(self, x)


def match_frames(x: torch.Tensor, frames: int) -> torch.Tensor:
    """[B, C, T] -> [B, C, frames] by linear interpolation along time."""
    if x.shape[-1] == frames:
        return x
    return torch.nn.functional.interpolate(x, size=frames, mode="linear", align_corners=False)


class DastNetwork(torch.nn.Module):
    """Fbank [B, T, n_mels] and/or SSL hidden states [L, B, T', D] -> speaker embeddings [B, E]."""

    def __init__(self, config: NetworkConfig):
        super().__init__()
        from speechbrain.lobes.models.ECAPA_TDNN import AttentiveStatisticsPooling, BatchNorm1d

        self.config = config
        c = config
        if c.fusion != "fbank":
            self.layer_weights = LayerWeightedSum(c.ssl_layers)
        inputs = {
            "fbank": {"fbank": c.n_mels},
            "ssl": {"ssl": c.ssl_dim},
            "raw": {"raw": c.n_mels + c.ssl_dim},
            "mid": {"fbank": c.n_mels, "ssl": c.ssl_dim},
        }[c.fusion]
        self.encoders = torch.nn.ModuleDict(
            {stream: FrameEncoder(size, c.channels, c.attention_channels) for stream, size in inputs.items()}
        )
        width = c.channels[-1]
        self.pool = AttentiveStatisticsPooling(width, attention_channels=c.attention_channels)
        self.pool_bn = BatchNorm1d(input_size=2 * width)
        self.embedding = torch.nn.Linear(2 * width, c.embedding_dim)

    def frame_features(self, fbank: torch.Tensor | None, ssl_hidden: torch.Tensor | None) -> torch.Tensor:
        """Fused frame-level features [B, C, T]."""
        fusion = self.config.fusion
        ssl = self.layer_weights(ssl_hidden) if fusion != "fbank" else None
        if fusion == "fbank":
            return self.encoders["fbank"](fbank)
        if fusion == "ssl":
            return self.encoders["ssl"](ssl)
        if fusion == "raw":
            ssl = match_frames(ssl.transpose(1, 2), fbank.shape[1]).transpose(1, 2)
            return self.encoders["raw"](torch.cat([fbank, ssl], dim=2))
        spectral = self.encoders["fbank"](fbank)
        return spectral * match_frames(self.encoders["ssl"](ssl), spectral.shape[-1])  # Hadamard product

    def forward(self, fbank: torch.Tensor | None, ssl_hidden: torch.Tensor | None) -> torch.Tensor:
        frames = self.frame_features(fbank, ssl_hidden)
        pooled = self.pool_bn(self.pool(frames)).squeeze(-1)
        return self.embedding(pooled)

    def set_dropout(self, p: float) -> None:
        """Dropout of every TDNN block (0 in Stage I, 0.3 afterwards, section 3.2)."""
        for module in self.modules():
            if isinstance(module, torch.nn.modules.dropout._DropoutNd):
                module.p = p


class SpecAugment:
    """Park et al. (2019) masking of features [B, T, F]: each crop gets its own masks, set to zero
    (the features are mean-normalised, so zero is the mean). Widths are uniform in [0, width]."""

    def __init__(self, freq_masks: int, freq_width: int, time_masks: int, time_width: int):
        self.freq_masks, self.freq_width = freq_masks, freq_width
        self.time_masks, self.time_width = time_masks, time_width

    def __call__(self, feats: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        out = feats.clone()
        batch, frames, bins = feats.shape
        for b in range(batch):
            for axis, count, width, size in (
                (1, self.time_masks, self.time_width, frames),
                (2, self.freq_masks, self.freq_width, bins),
            ):
                for _ in range(count):
                    w = int(torch.randint(0, min(width, size) + 1, (), generator=generator))
                    start = int(torch.randint(0, size - w + 1, (), generator=generator))
                    if axis == 1:
                        out[b, start : start + w, :] = 0.0
                    else:
                        out[b, :, start : start + w] = 0.0
        return out
