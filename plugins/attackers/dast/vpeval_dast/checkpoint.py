"""A saved DAST model: network.pt (state dict of the trainable network, no classifier head),
config.json (network shape, SSL source, stages done) and history.json; stages/<I|II|III>/ holds the
same for each stage's end, so a Stage II model can start another attacker's Stage III.

Weights are saved from the CPU (vpeval.device.cpu_state_dict), whatever device trained them, and load
onto any device: read on `map_location` (the CPU by default), then copied into the network where it is."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from vpeval.device import cpu_state_dict
from vpeval.errors import ConfigError, MissingModelError
from vpeval.torchload import load_weights_only
from vpeval_dast.model import DastNetwork, NetworkConfig

WEIGHTS = "network.pt"
CONFIG = "config.json"
HISTORY = "history.json"
STAGES = "stages"


def save_network(
    folder: Path, network: DastNetwork | dict, config: NetworkConfig, ssl: dict, stages_done: list[str]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(cpu_state_dict(network), folder / WEIGHTS)
    (folder / CONFIG).write_text(
        json.dumps({"network": config.to_json(), "ssl": ssl, "stages_done": stages_done}, indent=2)
    )


def snapshot(network: torch.nn.Module) -> dict:
    """A copy of the network's weights on the CPU that later training leaves alone."""
    return {key: value.detach().to("cpu", copy=True) for key, value in network.state_dict().items()}


def read_checkpoint(
    path: str | Path, field: str, map_location: str = "cpu"
) -> tuple[NetworkConfig, dict, list[str], dict]:
    """(network config, ssl source, stages done, state dict) of a saved folder (torch.load weights_only)."""
    folder = Path(path).expanduser()
    folder = folder.parent if folder.name == WEIGHTS else folder
    if not (folder / WEIGHTS).is_file() or not (folder / CONFIG).is_file():
        raise MissingModelError(
            f"{field}: {folder} has no {WEIGHTS} and {CONFIG}; give a folder a dast attacker saved "
            f"(or one of its {STAGES}/<stage> folders)."
        )
    try:
        meta = json.loads((folder / CONFIG).read_text())
        config = NetworkConfig.from_json(meta["network"])
    except (ValueError, KeyError, TypeError) as exc:
        raise MissingModelError(f"{field}: {folder / CONFIG} is not a dast model configuration ({exc}).") from None
    state = load_weights_only(folder / WEIGHTS, map_location=map_location)
    return config, meta.get("ssl", {}), list(meta.get("stages_done", [])), state


def load_into(network: DastNetwork, path: str | Path, field: str, map_location: str = "cpu") -> list[str]:
    """Load a saved network's weights into `network`, wherever it is (same shape required); return the stages
    it had done. map_location: where the file's tensors are read to first."""
    config, _, stages_done, state = read_checkpoint(path, field, map_location)
    if config != network.config:
        raise ConfigError(
            f"{field}: the model in {path} is {describe(config)}, but this attacker's parameters ask "
            f"for {describe(network.config)}; set the same fusion, ssl and sizes, or another checkpoint."
        )
    try:
        network.load_state_dict(state)
    except (RuntimeError, TypeError, AttributeError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise MissingModelError(f"{field}: {path} does not hold the weights of {describe(config)} ({first}).") from None
    return stages_done


def describe(config: NetworkConfig) -> str:
    ssl = f", ssl {config.ssl_layers} layers x {config.ssl_dim}" if config.fusion != "fbank" else ""
    return (
        f"fusion {config.fusion} with n_mels={config.n_mels}{ssl}, channels={list(config.channels)}, "
        f"attention_channels={config.attention_channels}, embedding_dim={config.embedding_dim}"
    )
