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

import threading
from collections.abc import Sequence

import torch

# The masked pieces are shared with the speech metrics' wav2vec2 batches (vpeval_torch.ssl_masked).
from vpeval_torch.ssl_masked import (  # noqa: E402,F401 (normalize, masked_group_norm: this module's names)
    NORMALIZE_EPS,
    conv_features,
    frame_lengths,
    masked_group_norm,
    normalize,
)


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
    # Hooks sit on the shared model: another thread's forward (a run's workers embed buckets side by side,
    # vpeval_torch.threads) must neither fill this call's layers nor be stopped by it.
    owner = threading.get_ident()

    def keep(index: int, value: torch.Tensor) -> None:
        if threading.get_ident() != owner:
            return
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
