"""Tiny random-weight model folders in the layouts seed 000's paper-scale file reads (for tests, never results).

LUAR: a folder laid out as LUAR-MUD / LUAR-CRUD are published (config.json with model_type LUAR, transformer.*
and linear.* tensors in model.safetensors) over a sentence-transformers backbone folder.
(The tiny CTranslate2 Whisper the file's text systems read is vpeval_speech.tiny.write_whisper_ct2_folder.)
"""

from __future__ import annotations

import json
from pathlib import Path


def write_luar_folder(folder: Path, backbone: Path, embedding_size: int = 16, seed: int = 3) -> Path:
    """LUAR's published layout: the backbone's transformer weights, shifted by a little noise so they differ from
    the backbone's, and a random episode-level projection to `embedding_size`."""
    import torch
    from safetensors.torch import save_file

    from vpeval_multiutt.text_model import TextModel

    sentence = TextModel(backbone, 12, 4, embedding_size, False).sentence
    torch.manual_seed(seed)
    transformer = {f"transformer.{k}": v + 0.01 * torch.randn_like(v) for k, v in sentence.model.state_dict().items()}
    linear = {"linear.weight": torch.randn(embedding_size, sentence.dim), "linear.bias": torch.randn(embedding_size)}
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(
        json.dumps({"model_type": "LUAR", "embedding_size": embedding_size, "auto_map": {}})
    )
    save_file({k: v.contiguous() for k, v in {**transformer, **linear}.items()}, str(folder / "model.safetensors"))
    return folder
