"""Tiny random-weight transformers folders of the three models, for tests (the real loading code reads them).

Same architecture as the released models (7-block CNN with a 320-sample stride, positional convolution,
WavLM's gated relative position bias), only narrow and shallow. "layer": the Large variants (layer norm
in every CNN block, layer norm first); "group": the Base variants (group norm in CNN block 0, post-norm).
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path

SMALL = {
    "hidden_size": 32,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "conv_dim": [16] * 7,
    "num_conv_pos_embeddings": 8,
    "num_conv_pos_embedding_groups": 4,
}
WAVLM_EXTRA = {"num_buckets": 32, "max_bucket_distance": 64}
CLASSES = {"wavlm": ("WavLMConfig", "WavLMModel"), "hubert": ("HubertConfig", "HubertModel")}
CLASSES["wav2vec2"] = ("Wav2Vec2Config", "Wav2Vec2Model")
_MADE: dict[tuple[str, str, bool], Path] = {}


def write_folder(kind: str, folder: Path, norm: str = "layer", seed: int = 0, do_normalize: bool = True) -> Path:
    """save_pretrained of a random-weight model (norms and biases perturbed so every weight matters)."""
    import torch
    import transformers

    config_class, model_class = (getattr(transformers, name) for name in CLASSES[kind])
    extra = WAVLM_EXTRA if kind == "wavlm" else {}
    stable = norm == "layer"
    config = config_class(**SMALL, **extra, feat_extract_norm=norm, do_stable_layer_norm=stable, conv_bias=True)
    torch.manual_seed(seed)
    model = model_class(config).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "norm" in name or name.endswith("bias") or "gru_rel_pos_const" in name:
                param.add_(0.1 * torch.randn_like(param))
    model.save_pretrained(folder)
    preprocessor = {"do_normalize": do_normalize, "feature_size": 1, "sampling_rate": 16000, "padding_value": 0.0}
    (Path(folder) / "preprocessor_config.json").write_text(json.dumps(preprocessor))
    return Path(folder)


def tiny_folder(kind: str, norm: str = "layer", do_normalize: bool = True) -> Path:
    """One shared folder per (kind, norm) in this process's temporary directory."""
    key = (kind, norm, do_normalize)
    if key not in _MADE:
        folder = Path(tempfile.mkdtemp(prefix=f"vpeval-{kind}-{norm}-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _MADE[key] = write_folder(kind, folder, norm, 0, do_normalize)
    return _MADE[key]
