"""The soft content encoder of SSL-SAS: fairseq HuBERT (Base) and the 200-unit soft projection.

The release's `SoftPredictor` (models_test.py) wraps fairseq's HuBERT (pretraining heads removed) as
`ssl_model` and holds `W` [200, 768]. Its forward, as published:

    x = ssl_model(wav, mask=False, features_only=True)["x"]   # last transformer layer [B, T, 768]
    x = F.normalize(x)                                         # torch's default dim=1: over TIME
    logits = F.linear(x, F.normalize(W))                       # rows of W unit length -> [B, T, 200]

F.normalize's default axis is 1, which for [B, T, 768] is the frame axis: each feature channel is scaled
to unit length over the utterance, not each frame over its channels. That is what the released
generator was trained on, so it is kept (and tested).

Here the HuBERT is transformers' HubertModel; fairseq's key names are renamed onto it as transformers'
conversion script (convert_hubert_original_pytorch_checkpoint_to_pytorch.py) does. The shape is read
from the weights (widths, kernels, layer count); what weights do not hold is HuBERT's: the CNN strides
from the kernels (10 -> 5, 3 -> 2, 2 -> 2, fairseq's default extractor), attention heads = width / 64
(Base 12, Large 16), GELU, post-LayerNorm (Base), group-norm extractor.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from vpeval.errors import MissingModelError

LAYER_MAPPING = {
    "self_attn.k_proj": "attention.k_proj",
    "self_attn.v_proj": "attention.v_proj",
    "self_attn.q_proj": "attention.q_proj",
    "self_attn.out_proj": "attention.out_proj",
    "self_attn_layer_norm": "layer_norm",
    "fc1": "feed_forward.intermediate_dense",
    "fc2": "feed_forward.output_dense",
    "final_layer_norm": "final_layer_norm",
}
TOP_MAPPING = {
    "post_extract_proj": "feature_projection.projection",
    "encoder.pos_conv.0": "encoder.pos_conv_embed.conv",
    "encoder.layer_norm": "encoder.layer_norm",
    "layer_norm": "feature_projection.layer_norm",
    "mask_emb": "masked_spec_embed",
}
# fairseq's pretraining heads: remove_pretraining_modules() drops them; an export that kept them is fine.
PRETRAINING_ONLY = ("label_embs_concat", "final_proj.")
STRIDE_OF_KERNEL = {10: 5, 3: 2, 2: 2}
HEAD_WIDTH = 64


def split_soft_state(state: dict[str, Any], prefix: str) -> tuple[dict[str, Any], Any]:
    """(HuBERT state dict, W) of a SoftPredictor state dict whose keys start with `prefix`
    (`latent_encoder.` inside a g_ checkpoint's generator, `` in soft_model.pt)."""
    hubert = {k[len(prefix) + len("ssl_model.") :]: v for k, v in state.items() if k.startswith(prefix + "ssl_model.")}
    return hubert, state.get(prefix + "W")


def hubert_config(state: dict[str, Any], source: Path):
    """transformers' HubertConfig of a fairseq HuBERT state dict, from its weights' shapes."""
    from transformers import HubertConfig

    convs = []
    index = 0
    while f"feature_extractor.conv_layers.{index}.0.weight" in state:
        convs.append(tuple(state[f"feature_extractor.conv_layers.{index}.0.weight"].shape))
        index += 1
    layers = 0
    while f"encoder.layers.{layers}.fc1.weight" in state:
        layers += 1
    if not convs or not layers or "post_extract_proj.weight" not in state or "encoder.pos_conv.0.weight_v" not in state:
        raise MissingModelError(
            f"{source}: the HuBERT weights (ssl_model.*) lack the feature extractor, the transformer layers, "
            "post_extract_proj or encoder.pos_conv; give the release's soft_model.pt or its g_ checkpoint."
        )
    kernels = [k for _, _, k in convs]
    if any(k not in STRIDE_OF_KERNEL for k in kernels):
        raise MissingModelError(
            f"{source}: HuBERT CNN kernels {kernels} are not fairseq's default extractor's (10, 3, 2), so the "
            "strides are unknown."
        )
    hidden = int(state["post_extract_proj.weight"].shape[0])
    pos = state["encoder.pos_conv.0.weight_v"].shape  # [hidden, hidden / groups, kernel]
    return HubertConfig(
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // HEAD_WIDTH),
        intermediate_size=int(state["encoder.layers.0.fc1.weight"].shape[0]),
        hidden_act="gelu",
        feat_extract_norm="group",
        feat_extract_activation="gelu",
        conv_dim=[d for d, _, _ in convs],
        conv_kernel=kernels,
        conv_stride=[STRIDE_OF_KERNEL[k] for k in kernels],
        conv_bias="feature_extractor.conv_layers.0.0.bias" in state,
        do_stable_layer_norm=False,
        feat_proj_layer_norm=True,
        num_conv_pos_embeddings=int(pos[2]),
        num_conv_pos_embedding_groups=int(hidden // pos[1]),
        layer_norm_eps=1e-5,
        mask_time_prob=0.0,
        layerdrop=0.0,
    )


def hf_name(name: str, weight_norm: dict[str, str]) -> str | None:
    """The transformers HubertModel key of one fairseq HuBERT key, or None."""
    conv = re.fullmatch(r"feature_extractor\.conv_layers\.(\d+)\.(0|2)\.(weight|bias)", name)
    if conv:
        layer, part, kind = conv.groups()
        if part == "0":
            return f"feature_extractor.conv_layers.{layer}.conv.{kind}"
        return f"feature_extractor.conv_layers.{layer}.layer_norm.{kind}" if layer == "0" else None
    layer = re.fullmatch(r"encoder\.layers\.(\d+)\.(.+)", name)
    if layer:
        index, rest = layer.groups()
        for key, mapped in LAYER_MAPPING.items():
            if rest.startswith(key + "."):
                return f"encoder.layers.{index}.{mapped}{rest[len(key) :]}"
        return None
    for key, mapped in TOP_MAPPING.items():
        if name == key or name.startswith(key + "."):
            suffix = name[len(key) :]
            if key == "encoder.pos_conv.0" and suffix[1:] in weight_norm:
                suffix = "." + weight_norm[suffix[1:]]
            return mapped + suffix
    return None


def load_hubert(state: dict[str, Any], source: Path):
    """transformers' HubertModel holding a fairseq HuBERT state dict (strict: one sentence per misfit)."""
    from transformers import HubertModel

    model = HubertModel(hubert_config(state, source))
    wanted = model.state_dict()
    parametrized = any(k.endswith("original0") for k in wanted)
    weight_norm = (
        {"weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}
        if parametrized
        else {"weight_g": "weight_g", "weight_v": "weight_v"}
    )
    mapped: dict[str, Any] = {}
    for name, tensor in state.items():
        if name.startswith(PRETRAINING_ONLY):
            continue
        target = hf_name(name, weight_norm)
        if target == "masked_spec_embed" and target not in wanted:
            continue  # training-time masking only; the model is built without it (mask_time_prob 0)
        if target is None or target not in wanted:
            raise MissingModelError(
                f"{source}: the HuBERT key ssl_model.{name} has no place in transformers' HubertModel (as its "
                "conversion script maps fairseq's keys); give the release's soft_model.pt or g_ checkpoint."
            )
        if tuple(tensor.shape) != tuple(wanted[target].shape):
            raise MissingModelError(
                f"{source}: the HuBERT key ssl_model.{name} has shape {tuple(tensor.shape)} where its other weights "
                f"imply {tuple(wanted[target].shape)}."
            )
        mapped[target] = tensor
    if "masked_spec_embed" in wanted and "masked_spec_embed" not in mapped:
        mapped["masked_spec_embed"] = wanted["masked_spec_embed"]  # training-time masking only
    missing = sorted(set(wanted) - set(mapped))
    if missing:
        raise MissingModelError(
            f"{source}: no weight for HuBERT key {missing[0]} ({len(missing)} missing); give the release's "
            "soft_model.pt or g_ checkpoint."
        )
    model.load_state_dict(mapped, strict=True)
    return model


class SoftContentEncoder(nn.Module):
    """Waveform [B, samples] (16 kHz, as given: HuBERT Base reads unnormalised audio) -> soft content
    logits [B, frames, units] at 50 Hz, as the release's SoftPredictor computes them."""

    def __init__(self, hubert: nn.Module, W: torch.Tensor):
        super().__init__()
        self.hubert = hubert
        self.W = nn.Parameter(W.detach().clone().float(), requires_grad=False)

    @property
    def units(self) -> int:
        return int(self.W.shape[0])

    def forward(self, wav: torch.Tensor) -> torch.Tensor:
        x = self.hubert(wav).last_hidden_state
        x = F.normalize(x)  # dim=1, the frame axis: the published quirk, kept
        return F.linear(x, F.normalize(self.W.to(x.dtype)))


def load_soft_encoder(state: dict[str, Any], prefix: str, source: Path) -> SoftContentEncoder:
    hubert_state, W = split_soft_state(state, prefix)
    if W is None or not hubert_state:
        raise MissingModelError(
            f"{source} holds no soft content encoder ({prefix}W and {prefix}ssl_model.*); give the release's "
            "HuBERT_soft/soft_model.pt."
        )
    hubert = load_hubert(hubert_state, source)
    if W.dim() != 2 or W.shape[1] != hubert.config.hidden_size:
        raise MissingModelError(
            f"{source}: {prefix}W has shape {tuple(W.shape)}, not [units, {hubert.config.hidden_size}]."
        )
    return SoftContentEncoder(hubert, W)
