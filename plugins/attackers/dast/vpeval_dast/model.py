"""The dual-stream network (paper section 2.1): streams, frame encoders, fusion, pooling, embedding.

Fbank frames (100/s) and weighted-sum SSL frames (50/s) have different rates: where they meet (raw
concatenation, mid-level product) the SSL side is linearly interpolated to the Fbank frame count.

Padded batches (embedding several utterances at once) pass each row's true frame counts: every
convolution then sees, past a row's end, the reflection speechbrain's own "same" padding would add
(`reflect_past_ends`), and the SE blocks and attentive statistics pooling average over real frames
only, so a row's embedding equals the one of its utterance alone up to float summation order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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


# Frames past the longest row that a padded batch carries, so that even the longest row's end gets the
# reflection its widest convolution reads (kernel 3, dilation 4: 4 frames; kernel 5, dilation 1: 2).
PAD_MARGIN = 4


def relative_lengths(lengths: torch.Tensor, frames: int) -> torch.Tensor:
    """speechbrain's relative lengths for `frames`-long tensors; half a frame short, so that its
    length_to_mask (index < length x frames) never counts a padded frame whatever the rounding."""
    return (lengths.to(torch.float32) - 0.5) / frames


@contextlib.contextmanager
def reflect_past_ends(module: torch.nn.Module, lengths: torch.Tensor) -> Iterator[None]:
    """While active: before every "same"-padded convolution of `module` (kernel > 1), each row's frames
    just past its end hold the reflection of its last frames, as speechbrain's reflect padding gives an
    utterance alone. Frames further out stay whatever they are: no real output frame reads them."""
    from speechbrain.nnet.CNN import Conv1d

    handles = []
    for conv in module.modules():
        if isinstance(conv, Conv1d) and conv.kernel_size > 1:
            reach = conv.dilation * (conv.kernel_size - 1) // 2
            handles.append(conv.register_forward_pre_hook(_reflection_hook(lengths, reach)))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _reflection_hook(lengths: torch.Tensor, reach: int):
    def hook(_module, inputs):
        (x,) = inputs  # [B, C, T]
        frames = x.shape[-1]
        t = torch.arange(frames, device=x.device).unsqueeze(0)
        last = (lengths.to(x.device) - 1).unsqueeze(1)
        mirrored = 2 * last - t  # reflect padding: frame L + j takes frame L - 2 - j
        past = (t > last) & (t <= last + reach)
        index = torch.where(past, mirrored.clamp(min=0), t)
        return (torch.gather(x, 2, index.unsqueeze(1).expand(-1, x.shape[1], -1)),)

    return hook


class FrameEncoder(torch.nn.Module):
    """SpeechBrain's ECAPA-TDNN up to its multi-layer aggregation: [B, T, F] -> frame features [B, C, T]."""

    def __init__(self, input_size: int, channels: tuple[int, ...], attention_channels: int):
        super().__init__()
        ecapa = ecapa_tdnn(input_size, channels, attention_channels)
        self.blocks, self.mfa = ecapa.blocks, ecapa.mfa  # pooling and embedding come after fusion

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """lengths: each row's real frames (padded batch); None: every row is all real (frame_map)."""
        if lengths is None:
            return frame_map(self, x)
        relative = relative_lengths(lengths, x.shape[1])
        with reflect_past_ends(self, lengths):
            h = x.transpose(1, 2)
            outputs = []
            for index, block in enumerate(self.blocks):
                h = block(h) if index == 0 else block(h, lengths=relative)  # the first is a plain TDNN block
                outputs.append(h)
            return self.mfa(torch.cat(outputs[1:], dim=1))


def match_frames(x: torch.Tensor, frames: int) -> torch.Tensor:
    """[B, C, T] -> [B, C, frames] by linear interpolation along time."""
    if x.shape[-1] == frames:
        return x
    return torch.nn.functional.interpolate(x, size=frames, mode="linear", align_corners=False)


def match_rows(x: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor, frames: int) -> torch.Tensor:
    """Padded [B, C, T] with row lengths -> [B, C, frames]: each row's real frames interpolated to its own
    target count (as match_frames does for the row alone), zeros after."""
    out = x.new_zeros(x.shape[0], x.shape[1], frames)
    for row, (length, target) in enumerate(zip(lengths.tolist(), targets.tolist())):
        out[row, :, :target] = match_frames(x[row : row + 1, :, :length], target)[0]
    return out


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

    def padded_frame_features(
        self,
        fbank: torch.Tensor | None,
        ssl_hidden: torch.Tensor | None,
        fbank_lengths: torch.Tensor | None,
        ssl_lengths: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """frame_features of a padded batch, and the real frames of each row of the result."""
        fusion = self.config.fusion
        ssl = self.layer_weights(ssl_hidden) if fusion != "fbank" else None
        if fusion == "fbank":
            return self.encoders["fbank"](fbank, fbank_lengths), fbank_lengths
        if fusion == "ssl":
            return self.encoders["ssl"](ssl, ssl_lengths), ssl_lengths
        if fusion == "raw":
            ssl = match_rows(ssl.transpose(1, 2), ssl_lengths, fbank_lengths, fbank.shape[1]).transpose(1, 2)
            return self.encoders["raw"](torch.cat([fbank, ssl], dim=2), fbank_lengths), fbank_lengths
        spectral = self.encoders["fbank"](fbank, fbank_lengths)
        semantic = match_rows(self.encoders["ssl"](ssl, ssl_lengths), ssl_lengths, fbank_lengths, spectral.shape[-1])
        return spectral * semantic, fbank_lengths

    def forward(
        self,
        fbank: torch.Tensor | None,
        ssl_hidden: torch.Tensor | None,
        fbank_lengths: torch.Tensor | None = None,
        ssl_lengths: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Embeddings [B, E]; with lengths (real frames per row of padded inputs) each row as if alone."""
        if fbank_lengths is None and ssl_lengths is None:
            frames = self.frame_features(fbank, ssl_hidden)
            pooled = self.pool(frames)
        else:
            frames, lengths = self.padded_frame_features(fbank, ssl_hidden, fbank_lengths, ssl_lengths)
            pooled = self.pool(frames, lengths=relative_lengths(lengths, frames.shape[-1]))
        return self.embedding(self.pool_bn(pooled).squeeze(-1))

    def set_dropout(self, p: float) -> None:
        """Dropout of every TDNN block (0 in Stage I, 0.3 afterwards, section 3.2)."""
        for module in self.modules():
            if isinstance(module, torch.nn.modules.dropout._DropoutNd):
                module.p = p


class SpecAugment:
    """Park et al. (2019) masking of features [B, T, F]: each crop gets its own masks, set to zero
    (the Fbank features are mean-normalised, so zero is the mean). Widths are uniform in [0, width]."""

    def __init__(self, freq_masks: int, freq_width: int, time_masks: int, time_width: int):
        self.freq_masks, self.freq_width = freq_masks, freq_width
        self.time_masks, self.time_width = time_masks, time_width

    def keep(self, batch: int, frames: int, bins: int, generator: torch.Generator) -> torch.Tensor:
        """Boolean [B, T, F] (CPU): False where a mask falls; the draws __call__ makes, in the same order."""
        keep = torch.ones(batch, frames, bins, dtype=torch.bool)
        for b in range(batch):
            for axis, count, width, size in (
                (1, self.time_masks, self.time_width, frames),
                (2, self.freq_masks, self.freq_width, bins),
            ):
                for _ in range(count):
                    w = int(torch.randint(0, min(width, size) + 1, (), generator=generator))
                    start = int(torch.randint(0, size - w + 1, (), generator=generator))
                    if axis == 1:
                        keep[b, start : start + w, :] = False
                    else:
                        keep[b, :, start : start + w] = False
        return keep

    def __call__(self, feats: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        batch, frames, bins = feats.shape
        return feats * self.keep(batch, frames, bins, generator).to(feats.device)

    def for_stream(self, n_mels: int, dim: int, frames_per_second: float) -> SpecAugment:
        """The same policy for another stream (the SSL states, section 3.2 masks both): mask widths of the
        same duration (time_width counts 10 ms Fbank frames) and the same share of the feature channels."""
        return SpecAugment(
            self.freq_masks,
            round(self.freq_width * dim / n_mels),
            self.time_masks,
            round(self.time_width * frames_per_second / 100.0),
        )

    def hidden(self, hidden: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Masks on SSL states [L, B, T, D]: one mask set per crop, the same on every layer, so the layers'
        weighted sum is masked exactly as the Park et al. masking of that sum would be."""
        _, batch, frames, dim = hidden.shape
        return hidden * self.keep(batch, frames, dim, generator).to(hidden.device).unsqueeze(0)
