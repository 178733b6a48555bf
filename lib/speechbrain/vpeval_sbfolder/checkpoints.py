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


def load_checkpoint(path: Path, mapped: bool = False) -> Any:
    """A checkpoint's tensors on the CPU, through torch.load(weights_only=True) (vpeval.torchload names a
    pickled object in one sentence instead of running it); move the filled module to the run's device.
    `mapped`: the tensors are views of the file mapped into memory (torch.load mmap=True, copy on write), for a
    state dict that load_state_dict copies at once: the file is then read once, by that copy, not read and
    copied too (a wav2vec2-base checkpoint: 0.45 -> 0.13 s CPU). Files mmap cannot read (torch's legacy format)
    and every refusal go through the unmapped load, which reads or names them as before."""
    from vpeval.torchload import load_weights_only

    if mapped:
        import torch

        try:
            return torch.load(Path(path), map_location="cpu", weights_only=True, mmap=True)
        except Exception:  # noqa: BLE001 - the unmapped load below gives the one-sentence error or reads it
            pass
    return load_weights_only(path, map_location="cpu")


def latest_checkpoint(folder: Path, prefix: str) -> Path | None:
    """The entry of `folder` the VoicePrivacy toolkits' utils.scan_checkpoint(folder, prefix) picks: among those
    named `prefix` + a whole number N (`CKPT+3`), the one with the largest N (ties by path). None when there is
    none, or when a name after `prefix` is no whole number (`CKPT+2024-03-01+10-00-00+00`): the toolkit's ASV
    then uses `folder` itself, as the callers do."""
    import glob

    entries = glob.glob(str(Path(folder) / (glob.escape(prefix) + "*")))
    try:
        numbered = sorted((int(Path(entry).name[len(prefix) :]), entry) for entry in entries)
    except ValueError:
        return None
    return Path(numbered[-1][1]) if numbered else None
