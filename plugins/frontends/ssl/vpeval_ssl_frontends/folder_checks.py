"""What a transformers model folder must be before transformers builds from it, each fault one sentence.

transformers builds the network its config.json describes before any weight is read, so a typo there
(hidden_size 1e9) would allocate terabytes: sizes are bounded first, as the speechbrain attacker bounds
a hyperparams.yaml. Files that are git-lfs pointers, configs that are not JSON and safetensors files whose
header is damaged are named here, not left to a library's traceback.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from vpeval.errors import MissingModelError

# A typo must not allocate terabytes before the weights fail to load: sizes beyond this are refused
# (the speechbrain attacker's bound; WavLM-Large's largest size is 4096, XLS-R 2B's 7680).
MAX_SIZE = 16384
MAX_JSON_BYTES = 1_000_000  # a transformers config.json is a few kB
# Numbers the base network never sizes a tensor from (a CTC checkpoint's vocabulary, its token ids, labels).
UNSIZED = ("vocab_size", "label2id")
LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def lfs_problem(path: Path) -> str | None:
    """A sentence when `path` is a git-lfs pointer instead of the file it points to, else None."""
    with path.open("rb") as stream:
        start = stream.read(len(LFS_POINTER))
    if start == LFS_POINTER:
        return (
            f"{path} is a git-lfs pointer, not the file itself; fetch it with `git lfs pull` in the model's repository."
        )
    return None


def read_json(path: Path) -> dict[str, Any]:
    """A folder's JSON settings file (config.json, preprocessor_config.json) as a dict; MissingModelError
    naming the file when it is a git-lfs pointer, too large, not JSON or not an object."""
    problem = lfs_problem(path)
    if problem:
        raise MissingModelError(problem)
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        raise MissingModelError(
            f"{path} is {size} bytes, where a transformers {path.name} is a few kB; give the file as save_pretrained "
            "writes it."
        )
    try:
        settings = json.loads(path.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise MissingModelError(
            f"{path} is not JSON ({reason}{where}); give the file as save_pretrained writes it."
        ) from None
    if not isinstance(settings, dict):
        raise MissingModelError(
            f"{path} holds a JSON {type(settings).__name__}, not an object of settings; give the file as "
            "save_pretrained writes it."
        )
    return settings


def read_config(path: Path) -> dict[str, Any]:
    """config.json's settings, every size within MAX_SIZE (MissingModelError naming the file and key)."""
    config = read_json(path)
    for key, value in _numbers(config, ""):
        if not math.isfinite(value) or abs(value) > MAX_SIZE:
            raise MissingModelError(f"{path}: `{key}` = {value} is beyond {MAX_SIZE}; check the value.")
    return config


def safetensors_problem(folder: Path) -> str | None:
    """A sentence naming the first *.safetensors file of `folder` whose header safetensors refuses (reading the
    header only: a header or tensor claiming more bytes than the file holds), or a git-lfs pointer; else None."""
    from safetensors import SafetensorError, safe_open

    for path in sorted(folder.glob("*.safetensors")):
        problem = lfs_problem(path)
        if problem:
            return problem
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except SafetensorError as exc:
            reason = str(exc).strip().rstrip(".") or type(exc).__name__
            return (
                f"{path} is not a readable safetensors file ({reason}); "
                "give the weights as save_pretrained writes them."
            )
    return None


def _numbers(value: Any, key: str):
    """(key path, number) of every int or float (not bool) in a JSON tree, skipping the UNSIZED keys and
    token ids."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name not in UNSIZED and not name.endswith("_token_id"):
                yield from _numbers(item, f"{key}.{name}" if key else str(name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _numbers(item, f"{key}[{index}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield key, value
