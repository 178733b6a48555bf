"""Where a SpeechBrain folder's modules take their checkpoints: the Pretrainer's `paths:` entry, as
SpeechBrain's Pretrainer reads it (and vpeval's ASR and emotion readers), else `<module>.ckpt` in the folder.

Read from hyperparams.yaml as data (no torch), so validate can use it as well as the loader.
"""

from __future__ import annotations

from pathlib import Path

from vpeval.errors import MissingModelError
from vpeval_sbfolder.checkpoints import checkpoint_file
from vpeval_speechbrain.hparams import HyperParams, Tagged

PRETRAINER = "speechbrain.utils.parameter_transfer.Pretrainer"
READ_MODULES = ("embedding_model", "mean_var_norm", "mean_var_norm_emb")  # whose checkpoints embeddings read
REQUIRED_WEIGHTS = ("embedding_model", "classifier")


def pretrainer_paths(hparams: HyperParams) -> dict[str, str]:
    """The `paths:` entry of the folder's Pretrainer (module name -> checkpoint file), its references
    resolved; {} without one. The Pretrainer itself is never built."""
    for key, node in hparams.values.items():
        if isinstance(node, Tagged) and node.target == PRETRAINER and isinstance(node.value, dict):
            paths = hparams.resolve(node.value.get("paths") or {}, hparams.where(key, node.line))
            if not isinstance(paths, dict) or not all(isinstance(v, str) for v in paths.values()):
                raise MissingModelError(
                    f"{hparams.where(key, node.line)}: the Pretrainer's `paths` is not a mapping of module names "
                    "to checkpoint files."
                )
            return {str(name): value for name, value in paths.items()}
    return {}


def checkpoint_path(folder: Path, key: str, paths: dict[str, str], required: bool) -> Path:
    """The checkpoint of module `key`: its `paths:` file, found as vpeval's ASR and emotion readers find it
    (vpeval_sbfolder.checkpoint_file), else `<key>.ckpt` in the folder. An optional module whose named file
    is nowhere falls back to `<key>.ckpt`, which its loader may then find missing."""
    if key not in paths:
        return folder / f"{key}.ckpt"
    try:
        return checkpoint_file(folder, key, paths)
    except MissingModelError:
        if required:
            raise
        return folder / f"{key}.ckpt"


def text_without_paths(hparams: HyperParams) -> str | None:
    """hyperparams.yaml's text with the Pretrainer's `paths:` block taken out, for a folder whose weights are
    all its own `<module>.ckpt` files (for SpeechBrain as for vpeval); None when there is no such block, or
    when the entry does not start a line of its own."""
    for node in hparams.values.values():
        if isinstance(node, Tagged) and node.target == PRETRAINER and "paths" in node.key_lines:
            lines = hparams.path.read_bytes().decode("utf-8", "surrogateescape").splitlines(keepends=True)
            start = node.key_lines["paths"] - 1
            if not lines[start].lstrip().startswith("paths:"):
                return None
            indent = len(lines[start]) - len(lines[start].lstrip())
            end = start + 1
            while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
                end += 1
            while end > start + 1 and not lines[end - 1].strip():  # blank lines after the block stay
                end -= 1
            return "".join(lines[:start] + lines[end:])
    return None
