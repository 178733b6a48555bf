"""Where a SpeechBrain folder keeps each checkpoint, and loading it without unpickling code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vpeval.errors import MissingModelError


def checkpoint_file(folder: Path, name: str, paths: dict[str, str]) -> Path:
    """Where the Pretrainer would find loadable `name`: its `paths` entry (a file in the folder by its base
    name, or an existing local path), else `<name>.ckpt` in the folder."""
    candidates = []
    if name in paths:
        given = Path(paths[name]).expanduser()
        candidates += [given if given.is_absolute() else folder / given, folder / given.name]
    candidates.append(folder / f"{name}.ckpt")
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise MissingModelError(
        f"{folder} has no checkpoint for `{name}` (looked for {', '.join(str(c) for c in candidates)}): copy the "
        "model's files into the folder."
    )


def load_checkpoint(path: Path) -> Any:
    """A checkpoint's tensors on the CPU, through torch.load(weights_only=True) (vpeval.torchload names a
    pickled object in one sentence instead of running it); move the filled module to the run's device."""
    from vpeval.torchload import load_weights_only

    return load_weights_only(path, map_location="cpu")
