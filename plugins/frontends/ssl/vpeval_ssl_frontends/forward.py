"""One padded batch through a transformers WavLM / HuBERT / wav2vec2 model: every layer's frames, masked.

Batched frames equal the frames each waveform gets alone, for every variant:
- input normalisation runs over each waveform's own samples, before padding;
- the CNN is unpadded convolution, so a real frame never reads padding, except through the base models'
  group norm (block 0 normalises each channel over time): here it takes its statistics over the real
  frames only (transformers' own forward would let padding shift them, which is why its base models
  refuse attention masks);
- the transformer gets the attention mask (padded frames are zeroed before the positional convolution,
  and never attended to).
What remains is float rounding of different kernel shapes (tests/test_batching.py states the tolerance).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

NORMALIZE_EPS = {"zero-mean-unit-var": 1e-7, "layer-norm": 1e-5}  # transformers' feature extractor; UniLM


def normalize(waves: torch.Tensor, lengths: torch.Tensor, mode: str) -> torch.Tensor:
    """Each row scaled to zero mean, unit variance over its first `lengths` samples; padding stays zero.

    zero-mean-unit-var is transformers' Wav2Vec2FeatureExtractor (x - mean) / sqrt(var + 1e-7);
    layer-norm is UniLM's F.layer_norm(x, x.shape), eps 1e-5 (VPC 2026's WavLM-Large extractor).
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


class _Enough(Exception):
    """Raised by the hook of the deepest wanted layer: the layers above it need not run."""


def layer_frames(
    model, waves: torch.Tensor, lengths: torch.Tensor, wanted: Sequence[int], run_all: bool = False
) -> dict[int, torch.Tensor]:
    """{layer: [B, T, D]} for each wanted layer: 0 is the transformer's input (CNN features after the
    projection and positional convolution), i is transformer layer i's output as the layer returns it
    (UniLM's `layer_results[i]`, which VPC 2026 stacks; in layer-norm-first models transformers'
    last_hidden_state is the last one after the encoder's final layer norm). The encoder stops after
    the deepest wanted layer unless `run_all` (layers never look ahead, so the frames are the same)."""
    frames = frame_lengths(model, lengths)
    features = conv_features(model.feature_extractor, waves, lengths).transpose(1, 2)
    mask = torch.arange(features.shape[1], device=waves.device)[None, :] < frames[:, None]
    projected = model.feature_projection(features)
    hidden = projected[0] if isinstance(projected, tuple) else projected  # wav2vec2, wavlm: (hidden, normed)

    captured: dict[int, torch.Tensor] = {}
    layers = model.encoder.layers
    deepest = max(wanted)

    def keep(index: int, value: torch.Tensor) -> None:
        captured[index] = value
        if index == deepest and not run_all:
            raise _Enough

    hooks = []
    if 0 in wanted:

        def first_input(module, args, kwargs):
            keep(0, args[0] if args else kwargs["hidden_states"])

        hooks.append(layers[0].register_forward_pre_hook(first_input, with_kwargs=True))
    for index in sorted({i for i in wanted if i > 0}):

        def output(module, args, kwargs, result, index=index):
            keep(index, result[0] if isinstance(result, tuple) else result)

        hooks.append(layers[index - 1].register_forward_hook(output, with_kwargs=True))
    try:
        model.encoder(hidden, attention_mask=mask)
    except _Enough:
        pass
    finally:
        for hook in hooks:
            hook.remove()
    return captured
