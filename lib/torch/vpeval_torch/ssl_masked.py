"""Padded batches through a transformers wav2vec2 / HuBERT / WavLM model that give each waveform its own frames.

transformers' own forward is padding-invariant only for the layer-norm ("Large") feature encoders: the
base models' group norm (block 0 normalises each channel over all time steps) takes its statistics over
the padding too, which is why those models refuse attention masks. Here:
- input normalisation runs over each waveform's own samples (padding stays zero);
- the CNN is unpadded convolution, so a real frame never reads padding, except through the group norm,
  whose statistics are taken over each row's real frames only (on the CPU each waveform goes through the CNN
  alone: see conv_features);
- the transformer gets the attention mask (padded frames are zeroed before the positional convolution,
  as an unpadded input's zero padding, and never attended to).
What remains is float rounding of different kernel shapes: the callers' tests state the tolerance.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
import torch.nn.functional as F

from vpeval_torch.autocast_copies import cast_copy
from vpeval_torch.shape_buckets import by_time_blocks

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
    """torch's GroupNorm of [B, C, T], each row's statistics over its first `lengths` frames (fp32, as UniLM):
    F.group_norm of each row's real frames, the very call an unpadded input gets; zeros past them."""
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    weight = None if norm.weight is None else norm.weight.float()
    bias = None if norm.bias is None else norm.bias.float()
    for b, n in enumerate(lengths.tolist()):
        out[b, :, :n] = F.group_norm(x[b : b + 1, :, :n].float(), norm.num_groups, weight, bias, norm.eps)[0]
    return out.to(x.dtype)


def conv_features(extractor, waves: torch.Tensor, lengths: torch.Tensor, per_row: bool | None = None) -> torch.Tensor:
    """The feature encoder's [B, C, T] output, each row's real frames as that waveform alone gets them; zeros
    past them on the CPU, frames no real frame reads elsewhere.

    On the CPU each waveform runs alone (unpadded, torch's own norms): the CNN's activations are tens of MB per
    batch, and its memory-bound passes (norms, GELU, layout copies) ran 1.5-3x slower per sample on a batch's
    than on one waveform's, which stay in cache (benchmarks/batched_speech.py). Elsewhere one padded batch, the
    group norm's statistics over each row's real frames. `per_row` overrides the choice."""
    if per_row if per_row is not None else waves.device.type == "cpu":
        bf16_cpu = waves.device.type == "cpu" and torch.is_autocast_enabled("cpu") and time_major_follows(extractor)
        run = functools.partial(time_major_cnn, extractor) if bf16_cpu else extractor
        rows = [run(waves[b : b + 1, :n]) for b, n in enumerate(lengths.tolist())]
        out = rows[0].new_zeros(len(rows), rows[0].shape[1], max(r.shape[-1] for r in rows))
        for b, row in enumerate(rows):
            out[b, :, : row.shape[-1]] = row[0]
        return out
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


def time_major_follows(extractor) -> bool:
    """Whether time_major_cnn computes this feature encoder: plain unpadded convolutions, each followed by an
    optional layer norm over channels or per-channel group norm, then the activation (wav2vec2, HuBERT, WavLM)."""
    layers = getattr(extractor, "conv_layers", None)
    return layers is not None and all(
        isinstance(getattr(layer, "conv", None), torch.nn.Conv1d)
        and layer.conv.padding == (0,) and layer.conv.groups == 1 and layer.conv.dilation == (1,)
        and (getattr(layer, "layer_norm", None) is None or isinstance(layer.layer_norm, torch.nn.LayerNorm)
             or (isinstance(layer.layer_norm, torch.nn.GroupNorm)
                 and layer.layer_norm.num_groups == layer.layer_norm.num_channels))
        for layer in layers
    )  # fmt: skip


def time_major_cnn(extractor, wave: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The feature encoder of one waveform [1, T] -> [1, C, T'] with the activations [T', C]: each convolution
    one matrix product of the [T', C_in x kernel] windows (unfold) with the weights, each layer norm over
    contiguous channels. Under CPU autocast the products run as bf16 GEMMs (oneDNN's AMX / AVX512-BF16 kernels),
    where torch's bf16 convolutions here are slower than fp32 for the 1-channel first block and without the
    layout copies transformers' [B, C, T] layers make around each norm. Used under CPU autocast only, so fp32
    runs keep transformers' own numbers bit for bit. `dtype`: of the products (default: the CPU autocast's).

    The products and activations run on row blocks of a few fixed shapes (shape_buckets.by_time_blocks), not one
    new shape per waveform length for oneDNN to build kernels for; a group-normed block's norm is folded into its
    weights first (group_normed_product)."""
    dtype = dtype or torch.get_autocast_dtype("cpu")
    x = wave[0, :, None]  # [T, 1]
    for layer in extractor.conv_layers:
        conv, norm = layer.conv, getattr(layer, "layer_norm", None)
        windows = x.unfold(0, conv.kernel_size[0], conv.stride[0])  # [T', C_in, kernel], the weight's order
        grouped = isinstance(norm, torch.nn.GroupNorm)  # block 0 of base models: statistics over all of time
        product = torch.float32 if grouped else dtype  # (a 10-wide product there: fp32 costs little)
        with torch.autocast("cpu", enabled=False):
            weight = cast_copy(conv, "weight", product).reshape(conv.out_channels, -1).mT  # cast once per model
            bias = cast_copy(conv, "bias", product)
            if grouped:  # the norm folded into the product: no [T', C] pass over all of time
                weight, bias = group_normed_product(windows.reshape(windows.shape[0], -1), weight, bias, norm)

        def row_wise(rows, weight=weight, bias=bias, norm=None if grouped else norm, activation=layer.activation):
            with torch.autocast("cpu", enabled=False):  # the product in `product`, whatever autocast would choose
                y = rows.to(weight.dtype) @ weight
                y = y if bias is None else y + bias
            return activation((y if norm is None else norm(y)).to(dtype))

        x = by_time_blocks(windows, row_wise)
    return x.mT[None]


def group_normed_product(rows: torch.Tensor, weight: torch.Tensor, bias, norm: torch.nn.GroupNorm):
    """(weight', bias') with rows @ weight' + bias' = GroupNorm(rows @ weight + bias) for a per-channel GroupNorm
    over time: the product is linear in the rows, so each channel's mean and variance over time follow from the
    rows' mean and covariance (float64, a k x k matrix for k-sample windows) without computing the [T', C]
    product first. The same function as torch's two passes over it, rounded differently in fp32."""
    r = rows.double()
    mean_rows = r.mean(0)
    centred = r - mean_rows
    covariance = centred.mT @ centred / r.shape[0]
    w = weight.double()
    mean = mean_rows @ w + (0.0 if bias is None else bias.double())
    variance = ((covariance @ w) * w).sum(0)  # diag(w' C w): each channel's variance over time
    scale = torch.rsqrt(variance + norm.eps) * (1.0 if norm.weight is None else norm.weight.double())
    shift = (0.0 if norm.bias is None else norm.bias.double()) - mean * scale
    return (w * scale).to(weight.dtype), (shift + (0.0 if bias is None else bias.double() * scale)).to(weight.dtype)


def time_major_under_autocast(module: torch.nn.Module) -> None:
    """Every feature encoder inside `module` that time_major_cnn follows runs it under CPU autocast (bf16), each
    row alone, and its own forward otherwise (fp32: transformers' numbers bit for bit): for callers that run
    transformers' model forward themselves (speechbrain's lobe, one utterance at a time). Idempotent."""
    for extractor in module.modules():
        if getattr(extractor, "time_major", False) or not time_major_follows(extractor):
            continue
        own = extractor.forward

        def forward(input_values, own=own, extractor=extractor):
            if input_values.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
                return torch.cat([time_major_cnn(extractor, row[None]) for row in input_values])
            return own(input_values)

        extractor.forward, extractor.time_major = forward, True


def frame_lengths(model, lengths: torch.Tensor) -> torch.Tensor:
    """Frames the model makes of `lengths` samples (transformers' own formula)."""
    return model._get_feat_extract_output_lengths(lengths).to(torch.long)


def last_hidden_state(
    model, waves: torch.Tensor, lengths: torch.Tensor, per_row: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """transformers' Wav2Vec2Model / HubertModel / WavLMModel `last_hidden_state` [B, T, D] of a padded,
    already normalised batch in eval mode, each row's real frames as that waveform alone gets them, and
    each row's frame count [B]. Models with an adapter are refused (ValueError): the callers fall back."""
    if getattr(model, "adapter", None) is not None:
        raise ValueError("masked batches do not follow a wav2vec2 adapter")
    frames = frame_lengths(model, lengths)
    features = conv_features(model.feature_extractor, waves, lengths, per_row).transpose(1, 2)
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
