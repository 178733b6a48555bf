"""Finding a user's local weights folder and reading safetensors from it (no hub, no pickle)."""

from __future__ import annotations

import json
from pathlib import Path

from vpeval.errors import MissingModelError


def require_folder(frontend: str, param: str, path: str | None, needs: str) -> Path:
    """The folder the user named in `param`, or one sentence saying what to put there."""
    if not path:
        raise MissingModelError(
            f"The {frontend} frontend needs its weights: set the parameter {param} to a local folder with {needs}."
        )
    folder = Path(path).expanduser()
    if not (folder / "config.json").is_file():
        raise MissingModelError(
            f"The {frontend} frontend parameter {param}={path} is not a folder with config.json; "
            f"point it at a local folder with {needs}."
        )
    return folder


def safetensors_files(folder: Path, prefix: str = "") -> list[Path]:
    """The safetensors files of a checkpoint, only the shards holding `prefix` keys when it is sharded."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        weight_map = json.loads(index.read_text())["weight_map"]
        return sorted({folder / f for key, f in weight_map.items() if key.startswith(prefix)})
    return sorted(folder.glob("*.safetensors"))


def read_state_dict(folder: Path, prefix: str = "", what: str = "model") -> dict:
    """Tensors whose names start with `prefix`, with the prefix removed."""
    from safetensors import safe_open

    files = safetensors_files(folder, prefix)
    state = {}
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                if key.startswith(prefix):
                    state[key[len(prefix) :]] = handle.get_tensor(key)
    if not state:
        raise MissingModelError(
            f"The folder {folder} has no safetensors weights starting with '{prefix}' for the {what}."
        )
    return state


def prefix_of(folder: Path, suffix: str) -> str | None:
    """The text before `suffix` in the first tensor name ending with it (checkpoints nest models differently)."""
    from safetensors import safe_open

    for file in safetensors_files(folder):
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                if key.endswith(suffix):
                    return key[: -len(suffix)]
    return None
