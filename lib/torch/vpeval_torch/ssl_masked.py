"""Padded batches through a transformers wav2vec2 / HuBERT / WavLM model that give each waveform its own frames.

transformers' own forward is padding-invariant only for the layer-norm ("Large") feature encoders: the
base models' group norm (block 0 normalises each channel over all time steps) takes its statistics over
the padding too, which is why those models refuse attention masks. Here:
- input normalisation runs over each waveform's own samples (padding stays zero);
- the CNN is unpadded convolution, so a real frame never reads padding, except through the group norm,
  whose statistics are taken over each row's real frames only;
- the transformer gets the attention mask (padded frames are zeroed before the positional convolution,
  as an unpadded input's zero padding, and never attended to).
What remains is float rounding of different kernel shapes: the callers' tests state the tolerance.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

NORMALIZE_EPS = {"zero-mean-unit-var": 1e-7, "layer-norm": 1e-5}  # transformers' feature extractor; UniLM, F.layer_norm


def normalize(waves: torch.Tensor, lengths: torch.Tensor, mode: str) -> torch.Tensor:
    """Each row scaled to zero mean, unit variance over its first `lengths` samples; padding stays zero.

    zero-mean-unit-var is transformers' Wav2Vec2FeatureExtractor (x - mean) / sqrt(var + 1e-7);
    layer-norm is F.layer_norm(x, x.shape) of one waveform, eps 1e-5 (UniLM's WavLM extractor, speechbrain's
    wav2vec2 lobe with normalize_wav).
    """
    if mode == "none":
        return waves
    mask = torch.arange(waves.shape[1], device=waves.device)[None, :] < lengths[:, None]
    count = lengths[:, None].to(waves.dtype)
    mean = (waves * mask).sum(1, keepdim=True) / count
    var = (((waves - mean) * mask) ** 2).sum(1, keepdim=True) / count
    return torch.where(mask, (waves - mean) / torch.sqrt(var + NORMALIZE_EPS[mode]), 0.0)


def masked_group_norm(x: torch.Tensor, lengths: torch.Tensor, norm: torch.nn.GroupNorm) -> torch.Tensor:
    """torch's GroupNorm of [B, C, T], statistics over each row's first `lengths` frames (fp32, as UniLM)."""
    batch, channels, frames = x.shape
    groups = norm.num_groups
    mask = (torch.arange(frames, device=x.device)[None, :] < lengths[:, None]).float()[:, None, None, :]
    grouped = x.float().reshape(batch, groups, channels // groups, frames)
    count = mask.sum(-1, keepdim=True) * (channels // groups)
    mean = (grouped * mask).sum((-2, -1), keepdim=True) / count
    var = (((grouped - mean) * mask) ** 2).sum((-2, -1), keepdim=True) / count
    out = ((grouped - mean) / torch.sqrt(var + norm.eps)).reshape(batch, channels, frames)
    if norm.affine:
        out = out * norm.weight.float()[None, :, None] + norm.bias.float()[None, :, None]
    return out.to(x.dtype)


def conv_features(extractor, waves: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The feature encoder's [B, C, T] output, its group norm masked to the real frames."""
    x = waves[:, None]
    for layer in extractor.conv_layers:
        norm = getattr(layer, "layer_norm", None)
        padded = bool((lengths < x.shape[-1]).any())  # unpadded rows: torch's own GroupNorm, bit for bit
        if isinstance(norm, torch.nn.GroupNorm) and padded:
            x = layer.conv(x)
            lengths = (lengths - layer.conv.kernel_size[0]) // layer.conv.stride[0] + 1
            x = layer.activation(masked_group_norm(x, lengths, norm))
        else:
            x = layer(x)  # unpadded convolution, per-frame layer norm: padding cannot reach real frames
            lengths = (lengths - layer.conv.kernel_size[0]) // layer.conv.stride[0] + 1
    return x


def frame_lengths(model, lengths: torch.Tensor) -> torch.Tensor:
    """Frames the model makes of `lengths` samples (transformers' own formula)."""
    return model._get_feat_extract_output_lengths(lengths).to(torch.long)


def last_hidden_state(model, waves: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' Wav2Vec2Model / HubertModel / WavLMModel `last_hidden_state` [B, T, D] of a padded,
    already normalised batch in eval mode, each row's real frames as that waveform alone gets them, and
    each row's frame count [B]. Models with an adapter are refused (ValueError): the callers fall back."""
    if getattr(model, "adapter", None) is not None:
        raise ValueError("masked batches do not follow a wav2vec2 adapter")
    frames = frame_lengths(model, lengths)
    features = conv_features(model.feature_extractor, waves, lengths).transpose(1, 2)
    mask = torch.arange(features.shape[1], device=waves.device)[None, :] < frames[:, None]
    projected = model.feature_projection(features)
    hidden = projected[0] if isinstance(projected, tuple) else projected  # wav2vec2, wavlm: (hidden, normed)
    out = model.encoder(hidden, attention_mask=mask)
    return (out[0] if isinstance(out, tuple) else out.last_hidden_state), frames


def pad(audios, device) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 waveforms zero-padded [B, T_max] and their lengths [B] on `device`."""
    from vpeval_torch.batching import pad_batch

    return pad_batch([np.asarray(a, dtype=np.float32).reshape(-1) for a in audios], device)


def masked_lobe(lobe) -> bool:
    """Whether speechbrain_wav2vec2 follows this module: speechbrain's wav2vec2 lobe on a transformers model
    without an adapter, returning the last layer (not output_all_hiddens)."""
    model = getattr(lobe, "model", None)
    return (
        type(lobe).__module__.startswith("speechbrain.")
        and hasattr(lobe, "normalize_wav")
        and hasattr(lobe, "output_norm")
        and not getattr(lobe, "output_all_hiddens", False)
        and all(hasattr(model, name) for name in ("feature_extractor", "feature_projection", "encoder"))
        and getattr(model, "adapter", None) is None
    )


def speechbrain_wav2vec2(lobe, audios, device) -> tuple[torch.Tensor, torch.Tensor]:
    """speechbrain's Wav2Vec2 lobe (integrations.huggingface.wav2vec2) on a padded batch, each row as the lobe
    gives that waveform alone (`lobe(wav[None])`): F.layer_norm of the row's own samples where the lobe
    normalises the waveform, the masked model, and the output's layer norm over the row's own frames
    (output_norm). Returns [B, T, D] (frames past a row's count are not defined) and the frame counts [B].
    ValueError for lobes this does not follow (output_all_hiddens, an adapter)."""
    if getattr(lobe, "output_all_hiddens", False):
        raise ValueError("masked batches do not follow a wav2vec2 lobe with output_all_hiddens")
    waves, lengths = pad(audios, device)
    if lobe.normalize_wav:
        waves = normalize(waves, lengths, "layer-norm")
    out, frames = last_hidden_state(lobe.model, waves, lengths)
    if lobe.output_norm:
        # F.layer_norm over the whole [T, D] output of one waveform: its own frames only
        rows = [F.layer_norm(out[b, :n], (int(n), out.shape[2])) for b, n in enumerate(frames.tolist())]
        out = torch.nn.utils.rnn.pad_sequence(rows, batch_first=True)
    return out, frames
