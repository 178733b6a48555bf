"""The original UniLM WavLM checkpoint (`WavLM-Large.pt`, as VPC 2026 ships it) in transformers' WavLMModel.

The file is `{"cfg": {...}, "model": state_dict}`: read with weights_only=True (tensors, dicts and plain
values only; a checkpoint that needs any other Python object is refused, never unpickled). The cfg builds
a WavLMConfig and the state dict's keys are renamed as transformers' own conversion script does
(transformers/models/wavlm/convert_wavlm_original_pytorch_checkpoint_to_pytorch.py: its MAPPING and
load_conv_layer), then loaded strictly: a key the mapping does not know, or a weight the model lacks, is
one sentence naming the file and the key.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from vpeval.errors import MissingModelError

# UniLM name -> transformers name, from the conversion script's MAPPING ("*" is the layer index).
LAYER_MAPPING = {
    "self_attn.k_proj": "attention.k_proj",
    "self_attn.v_proj": "attention.v_proj",
    "self_attn.q_proj": "attention.q_proj",
    "self_attn.out_proj": "attention.out_proj",
    "self_attn.grep_linear": "attention.gru_rel_pos_linear",
    "self_attn.relative_attention_bias": "attention.rel_attn_embed",
    "self_attn.grep_a": "attention.gru_rel_pos_const",
    "self_attn_layer_norm": "layer_norm",
    "fc1": "feed_forward.intermediate_dense",
    "fc2": "feed_forward.output_dense",
    "final_layer_norm": "final_layer_norm",
}
TOP_MAPPING = {
    "post_extract_proj": "feature_projection.projection",
    "encoder.pos_conv.0": "encoder.pos_conv_embed.conv",
    "encoder.layer_norm": "encoder.layer_norm",
    "layer_norm": "feature_projection.layer_norm",  # the script's "w2v_model.layer_norm"
    "mask_emb": "masked_spec_embed",
}
# torch's weight norm: the old hook names (weight_g, weight_v) or the parametrization's (original0, original1).
WEIGHT_NORM = {"weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}
# UniLM's WavLMConfig defaults (WavLM.py) for keys an older cfg may lack.
UNILM_DEFAULTS: dict[str, Any] = {
    "extractor_mode": "default",
    "encoder_layers": 12,
    "encoder_embed_dim": 768,
    "encoder_ffn_embed_dim": 3072,
    "encoder_attention_heads": 12,
    "activation_fn": "gelu",
    "layer_norm_first": False,
    "conv_feature_layers": "[(512,10,5)] + [(512,3,2)] * 4 + [(512,2,2)] * 2",
    "conv_bias": False,
    "normalize": False,
    "dropout": 0.1,
    "attention_dropout": 0.1,
    "activation_dropout": 0.0,
    "encoder_layerdrop": 0.0,
    "dropout_input": 0.0,
    "mask_prob": 0.65,
    "conv_pos": 128,
    "conv_pos_groups": 16,
    "relative_position_embedding": False,
    "num_buckets": 320,
    "max_distance": 1280,
    "gru_rel_pos": False,
}


def is_unilm_checkpoint(path: Path) -> bool:
    """A file (WavLM-Large.pt), not a transformers folder."""
    return path.is_file()


def read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(cfg, state dict) of a UniLM checkpoint, read weights-only."""
    import pickle

    import torch

    from vpeval.torchload import load_weights_only

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if "Unsupported global" not in str(exc):  # not a refused Python object: a broken or foreign file
            load_weights_only(path)  # raises the core's sentence for those
            raise
        raise MissingModelError(
            f"{path} holds Python objects besides tensors, dicts and plain values, which vpeval never unpickles; "
            "where you trust the file, re-save it as torch.save({'cfg': dict(cfg), 'model': state_dict}, path)."
        ) from None
    except Exception:  # truncated or foreign files: the core's one sentence for them
        checkpoint = load_weights_only(path)
    if not isinstance(checkpoint, dict) or not isinstance(checkpoint.get("model"), dict):
        raise MissingModelError(
            f"{path} is not a UniLM WavLM checkpoint (a dict with 'cfg' and 'model'); give WavLM-Large.pt as "
            "microsoft/unilm releases it, or a transformers folder with config.json."
        )
    cfg = checkpoint.get("cfg")
    if not isinstance(cfg, dict):
        raise MissingModelError(
            f"{path} has no 'cfg' dict next to its weights, so its WavLM shape is unknown; give WavLM-Large.pt as "
            "microsoft/unilm releases it, or a transformers folder with config.json."
        )
    return {**UNILM_DEFAULTS, **cfg}, checkpoint["model"]


def parse_conv_layers(text: str, path: Path) -> list[tuple[int, int, int]]:
    """UniLM's conv_feature_layers, e.g. "[(512,10,5)] + [(512,3,2)] * 4", without eval(): list literals,
    + and * by an integer only."""

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, (ast.List, ast.Tuple)):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = value(node.left), value(node.right)
            return left + right if isinstance(node.op, ast.Add) else left * right
        raise ValueError(ast.dump(node))

    try:
        layers = value(ast.parse(text, mode="eval"))
        layers = [(int(d), int(k), int(s)) for d, k, s in layers]
    except (SyntaxError, ValueError, TypeError) as exc:
        raise MissingModelError(
            f"{path}: cfg conv_feature_layers {text!r} is not a list of (dim, kernel, stride) ({exc})."
        ) from None
    if not layers:
        raise MissingModelError(f"{path}: cfg conv_feature_layers {text!r} has no layers.")
    return layers


def wavlm_config(cfg: dict[str, Any], path: Path):
    """transformers' WavLMConfig of the UniLM cfg (eval mode: the dropouts matter only in training)."""
    from transformers import WavLMConfig

    if not cfg["relative_position_embedding"] or not cfg["gru_rel_pos"]:
        raise MissingModelError(
            f"{path}: cfg relative_position_embedding and gru_rel_pos must be true (WavLM Base, Base+ and Large "
            "have both); transformers' WavLMModel has no variant without them."
        )
    if cfg["extractor_mode"] not in ("default", "layer_norm"):
        raise MissingModelError(f"{path}: cfg extractor_mode {cfg['extractor_mode']!r} is not default or layer_norm.")
    conv = parse_conv_layers(cfg["conv_feature_layers"], path)
    return WavLMConfig(
        hidden_size=cfg["encoder_embed_dim"],
        num_hidden_layers=cfg["encoder_layers"],
        num_attention_heads=cfg["encoder_attention_heads"],
        intermediate_size=cfg["encoder_ffn_embed_dim"],
        hidden_act=cfg["activation_fn"],
        feat_extract_norm="layer" if cfg["extractor_mode"] == "layer_norm" else "group",
        feat_extract_activation="gelu",
        conv_dim=[d for d, _, _ in conv],
        conv_kernel=[k for _, k, _ in conv],
        conv_stride=[s for _, _, s in conv],
        conv_bias=cfg["conv_bias"],
        do_stable_layer_norm=cfg["layer_norm_first"],
        num_conv_pos_embeddings=cfg["conv_pos"],
        num_conv_pos_embedding_groups=cfg["conv_pos_groups"],
        num_buckets=cfg["num_buckets"],
        max_bucket_distance=cfg["max_distance"],
        hidden_dropout=cfg["dropout"],
        attention_dropout=cfg["attention_dropout"],
        activation_dropout=cfg["activation_dropout"],
        feat_proj_dropout=cfg["dropout_input"],
        layerdrop=cfg["encoder_layerdrop"],
        mask_time_prob=cfg["mask_prob"],
        layer_norm_eps=1e-5,  # torch's LayerNorm default, which UniLM's modules use
    )


def hf_name(name: str, group_norm: bool, weight_norm: dict[str, str]) -> str | None:
    """The transformers key of one UniLM key, or None when the conversion script has no place for it."""
    conv = re.fullmatch(r"feature_extractor\.conv_layers\.(\d+)\.(0|2|2\.1)\.(weight|bias)", name)
    if conv:
        layer, part, kind = int(conv.group(1)), conv.group(2), conv.group(3)
        if part == "0":
            return f"feature_extractor.conv_layers.{layer}.conv.{kind}"
        # part 2 (2.1 inside UniLM's transpose sandwich): every block's layer norm, or block 0's group norm
        if not group_norm or layer == 0:
            return f"feature_extractor.conv_layers.{layer}.layer_norm.{kind}"
        return None
    layer = re.fullmatch(r"encoder\.layers\.(\d+)\.(.+)", name)
    if layer:
        index, rest = layer.groups()
        for key, mapped in LAYER_MAPPING.items():
            if rest == key or rest.startswith(key + "."):
                return f"encoder.layers.{index}.{mapped}{rest[len(key) :]}"
        return None
    for key, mapped in TOP_MAPPING.items():
        if name == key or name.startswith(key + "."):
            suffix = name[len(key) :]
            if key == "encoder.pos_conv.0" and suffix[1:] in weight_norm:
                suffix = "." + weight_norm[suffix[1:]]
            return mapped + suffix
    return None


def map_state_dict(state: dict[str, Any], model, path: Path) -> dict[str, Any]:
    """UniLM's state dict renamed onto `model` (a WavLMModel); one sentence for any key that does not fit."""
    import torch

    group_norm = model.config.feat_extract_norm == "group"
    wanted = model.state_dict()
    parametrized = any(k.endswith("original0") for k in wanted)  # else a torch whose weight norm keeps weight_g
    weight_norm = WEIGHT_NORM if parametrized else {"weight_g": "weight_g", "weight_v": "weight_v"}
    mapped: dict[str, Any] = {}
    for name, tensor in state.items():
        target = hf_name(name, group_norm, weight_norm)
        if target is None or target not in wanted:
            raise MissingModelError(
                f"{path}: the checkpoint key {name} has no place in transformers' WavLMModel (as its conversion "
                "script maps keys); give WavLM-Large.pt as microsoft/unilm releases it."
            )
        if tuple(tensor.shape) != tuple(wanted[target].shape):
            raise MissingModelError(
                f"{path}: the checkpoint key {name} has shape {tuple(tensor.shape)} where its cfg implies "
                f"{tuple(wanted[target].shape)}; the file's cfg and weights do not belong together."
            )
        mapped[target] = tensor
    projection = "feature_projection.projection"
    if "post_extract_proj.weight" not in state:
        # UniLM has no projection when the CNN's width is the transformer's: an identity in transformers.
        dim = wanted[f"{projection}.weight"].shape[0]
        if wanted[f"{projection}.weight"].shape == (dim, dim):
            mapped[f"{projection}.weight"] = torch.eye(dim)
            mapped[f"{projection}.bias"] = torch.zeros(dim)
    if "masked_spec_embed" in wanted and "masked_spec_embed" not in mapped:
        mapped["masked_spec_embed"] = wanted["masked_spec_embed"]  # used only for training-time masking
    missing = sorted(set(wanted) - set(mapped))
    if missing:
        raise MissingModelError(
            f"{path}: the checkpoint has no weight for transformers' WavLMModel key {missing[0]} "
            f"({len(missing)} missing); give WavLM-Large.pt as microsoft/unilm releases it."
        )
    return mapped


def load_unilm_wavlm(path: Path):
    """(WavLMModel with the checkpoint's weights, the cfg's `normalize`)."""
    from transformers import WavLMModel

    cfg, state = read_checkpoint(path)
    model = WavLMModel(wavlm_config(cfg, path))
    model.load_state_dict(map_state_dict(state, model, path), strict=True)
    return model, bool(cfg["normalize"])
