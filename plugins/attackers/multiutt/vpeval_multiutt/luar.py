"""LUAR's published checkpoint (Rivera-Soto et al. 2021; the Hugging Face LUAR-MUD / LUAR-CRUD folders) read
as data: the paper's authorship encoder (seed 000, IV-B) without running the folder's own code.

The published folder's config.json says `model_type: LUAR` and points transformers at custom code
(`trust_remote_code`), which vpeval never runs. That code builds a RoBERTa from
sentence-transformers/paraphrase-distilroberta-base-v1, mean-pools each transcript's tokens, applies
parameter-free scaled dot-product self-attention across the episode, takes the maximum over the
episode and projects it with one linear layer to `embedding_size` (512). Its weights are `transformer.*`
(the RoBERTa) and `linear.weight` / `linear.bias`. Here the RoBERTa is built from a local copy of that
sentence-transformers folder (`luar_backbone_path`: config and tokenizer), filled with LUAR's
`transformer.*` tensors, and `LuarHead` is the episode attention, maximum and linear layer with LUAR's
weights.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from vpeval.errors import ConfigError, MissingModelError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def is_luar_folder(folder: Path) -> bool:
    try:
        return json.loads((Path(folder) / "config.json").read_text()).get("model_type") == "LUAR"
    except (OSError, ValueError):
        return False


def luar_config(folder: Path) -> dict:
    return json.loads((Path(folder) / "config.json").read_text())


def luar_state(folder: Path) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors, read without executing anything (safetensors, or weights_only)."""
    folder = Path(folder)
    for name in WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return load_file(str(path))
            from vpeval.torchload import load_weights_only

            return load_weights_only(path)
    raise MissingModelError(
        f"multiutt parameter text_model_path: the LUAR folder {folder} has neither {' nor '.join(WEIGHT_FILES)}; "
        "give the folder as published (LUAR-MUD or LUAR-CRUD)."
    )


class LuarHead(nn.Module):
    """LUAR's episode aggregation: sentence vectors [B, N, H] -> softmax(X X^T / sqrt(H)) X -> max over N ->
    linear -> [B, embedding_size]. Order-free (a permutation of the N permutes the rows the max reads)."""

    def __init__(self, hidden: int, out: int):
        super().__init__()
        self.linear = nn.Linear(hidden, out)

    def forward(self, sentences: torch.Tensor) -> torch.Tensor:
        scores = sentences @ sentences.transpose(-2, -1) / sentences.shape[-1] ** 0.5
        attended = torch.softmax(scores, dim=-1) @ sentences
        return self.linear(attended.max(dim=1).values)


def load_luar(sentence_encoder, head: LuarHead, folder: Path) -> None:
    """Fill the RoBERTa sentence encoder and the head with the checkpoint's tensors (every key must match)."""
    state = luar_state(folder)
    transformer = {k[len("transformer.") :]: v for k, v in state.items() if k.startswith("transformer.")}
    linear = {k[len("linear.") :]: v for k, v in state.items() if k.startswith("linear.")}
    try:
        sentence_encoder.model.load_state_dict(transformer, strict=False)
        missing = set(sentence_encoder.model.state_dict()) - set(transformer)
        head.linear.load_state_dict(linear)
    except RuntimeError as error:
        raise ConfigError(
            f"multiutt: the LUAR checkpoint in {folder} does not fit luar_backbone_path's network "
            f"({str(error)[:160]}); give the paraphrase-distilroberta-base-v1 folder LUAR was built on."
        ) from None
    # position_ids buffers are not stored by every transformers version; every weight must come from LUAR
    weights = {k for k in missing if not k.endswith("position_ids")}
    if weights:
        raise ConfigError(
            f"multiutt: the LUAR checkpoint in {folder} lacks {len(weights)} tensors of luar_backbone_path's network "
            f"(for example {sorted(weights)[0]}); give the paraphrase-distilroberta-base-v1 folder LUAR was built on."
        )
