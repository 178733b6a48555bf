"""A trained model folder: embedding_model.pt (state dict), config.json, backend.npz, history.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from vpeval.errors import ConfigError, MissingModelError
from vpeval.torchload import load_weights_only
from vpeval_asv.models import ModelConfig, build_embedding_model
from vpeval_asv.params import MAX_CHANNELS, MAX_MELS

WEIGHTS = "embedding_model.pt"
CONFIG = "config.json"
BACKEND = "backend.npz"
HISTORY = "history.json"


def save_model(folder: Path, config: ModelConfig, model: torch.nn.Module) -> None:
    """Weights as CPU tensors (a model trained on a GPU loads anywhere) and the config beside them."""
    from vpeval.device import cpu_state_dict

    folder.mkdir(parents=True, exist_ok=True)
    torch.save(cpu_state_dict(model), folder / WEIGHTS)
    (folder / CONFIG).write_text(json.dumps(config.to_json(), indent=2))


def resolve(path: str | Path, field: str) -> tuple[Path, Path]:
    """(weights file, config file) of a model folder or of its embedding_model.pt."""
    path = Path(path).expanduser()
    weights = path / WEIGHTS if path.is_dir() else path
    if not weights.is_file():
        raise MissingModelError(
            f"{field} points to {path}, which has no {WEIGHTS}; give the folder a trained ecapa/xvector attacker saved."
        )
    config = weights.parent / CONFIG
    if not config.is_file():
        raise MissingModelError(
            f"{field}: the model {weights} has no {CONFIG} next to it; copy the whole saved folder."
        )
    return weights, config


def read_config(path: str | Path, field: str) -> ModelConfig:
    _, config = resolve(path, field)
    try:
        model = ModelConfig.from_json(json.loads(config.read_text()))
    except (ValueError, KeyError, TypeError) as exc:
        raise MissingModelError(f"{field}: {config} is not a readable model configuration ({exc}).") from exc
    # The same bounds as the attackers' parameters: an edited config.json must not build a network of
    # a trillion channels before its weights fail to load.
    sizes_ok = (
        len(model.channels) == 5
        and all(1 <= c <= MAX_CHANNELS for c in model.channels)
        and 8 <= model.n_mels <= MAX_MELS
        and 2 <= model.embedding_dim <= MAX_CHANNELS
    )
    if model.architecture not in ("ecapa", "xvector") or not sizes_ok:
        raise MissingModelError(
            f"{field}: {config} describes {_describe(model)}, which no ecapa/xvector attacker saves; "
            "copy the whole folder a trained attacker saved."
        )
    return model


def load_weights(
    path: str | Path, field: str, expected: ModelConfig | None = None, device: str = "cpu"
) -> tuple[ModelConfig, torch.nn.Module]:
    """Rebuild the network of a saved folder, load its weights (torch.load weights_only=True, onto the
    CPU, whatever device saved them) and move it to `device`."""
    weights, _ = resolve(path, field)
    config = read_config(path, field)
    if expected is not None and config != expected:
        raise ConfigError(
            f"{field}: the model in {weights.parent} is {_describe(config)}, but the parameters ask for "
            f"{_describe(expected)}; set the same architecture parameters or another checkpoint."
        )
    model = build_embedding_model(config)
    state = load_weights_only(weights, map_location="cpu")
    try:
        model.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MissingModelError(
            f"{field}: {weights} does not hold the weights of {_describe(config)} ({first.rstrip('.:')}); "
            "copy the whole folder a trained attacker saved."
        ) from None
    model.eval()
    return config, model.to(device)


def save_backend(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    np.savez(folder / BACKEND, **arrays)


def load_backend(folder: Path) -> dict[str, np.ndarray] | None:
    path = folder / BACKEND
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _describe(config: ModelConfig) -> str:
    return (
        f"{config.architecture} with n_mels={config.n_mels}, channels={list(config.channels)}, "
        f"embedding_dim={config.embedding_dim}"
    )
