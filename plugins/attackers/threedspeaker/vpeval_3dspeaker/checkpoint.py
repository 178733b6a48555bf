"""Published checkpoints into the rebuilt networks: weights-only reading, nesting, WeSpeaker's names, strict loading.

3D-Speaker's .bin / .ckpt files are the embedding model's state dict. WeSpeaker's avg_model.pt is the
state dict of its training model, whose `projection` (the AAM-softmax head) is not part of the embedding
network and is dropped; its ERes2Net names a fused block's first branch conv2_1 / bn2_1 and the others
convs.0, ... where 3D-Speaker has convs.0, convs.1, ... (renamed here). Checkpoints written by training
code may nest the state dict under 'state_dict' or 'model'. Anything else is one sentence naming the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from vpeval.errors import MissingModelError
from vpeval.torchload import load_weights_only

NESTED = ("state_dict", "model")
TRAINING_HEAD = "projection."  # WeSpeaker's classifier, saved with the embedding model
DATA_PARALLEL = "module."
_WESPEAKER_FIRST_BRANCH = re.compile(r"^(layer\d+\.\d+\.)(conv2_1|bn2_1)\.")
_WESPEAKER_BRANCH = re.compile(r"^(layer\d+\.\d+\.)(convs|bns)\.(\d+)\.")


def read_state_dict(path: Path, what: str) -> dict[str, torch.Tensor]:
    """The tensors of `path` by name (unwrapped from 'state_dict' / 'model', DataParallel's 'module.' cut)."""
    data = load_weights_only(path)
    for key in NESTED:
        if isinstance(data, dict) and isinstance(data.get(key), dict):
            data = data[key]
            break
    if not isinstance(data, dict) or not data or not all(torch.is_tensor(v) for v in data.values()):
        raise MissingModelError(
            f"{path} holds no state dict of tensors (at its top level or under 'state_dict' or 'model'); give the "
            f"published {what} checkpoint, a file saved with torch.save(model.state_dict(), ...)."
        )
    if all(key.startswith(DATA_PARALLEL) for key in data):
        data = {key[len(DATA_PARALLEL) :]: value for key, value in data.items()}
    return dict(data)


def detect_layout(state: dict[str, torch.Tensor]) -> str:
    """wespeaker when the keys show WeSpeaker's training head or its fused-block names, else 3dspeaker."""
    if any(key.startswith(TRAINING_HEAD) or _WESPEAKER_FIRST_BRANCH.match(key) for key in state):
        return "wespeaker"
    return "3dspeaker"


def from_wespeaker(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """WeSpeaker's names as 3D-Speaker's: the training head dropped, fused blocks' branches renumbered
    (3D-Speaker's own names pass unchanged)."""
    fused = {m.group(1) for key in state if (m := _WESPEAKER_FIRST_BRANCH.match(key))}
    out = {}
    for key, value in state.items():
        if key.startswith(TRAINING_HEAD):
            continue
        first = _WESPEAKER_FIRST_BRANCH.match(key)
        branch = _WESPEAKER_BRANCH.match(key)
        if first:
            key = f"{first.group(1)}{'convs' if first.group(2) == 'conv2_1' else 'bns'}.0.{key[first.end() :]}"
        elif branch and branch.group(1) in fused:
            key = f"{branch.group(1)}{branch.group(2)}.{int(branch.group(3)) + 1}.{key[branch.end() :]}"
        out[key] = value
    return out


def load_strict(network: torch.nn.Module, state: dict[str, torch.Tensor], path: Path, what: str, hint: str) -> None:
    """network.load_state_dict(state, strict=True), or one sentence with the first difference."""
    expected = network.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    shapes = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    if missing or unexpected or shapes:
        if len(missing) == len(expected):
            detail = (
                f"none of its {len(state)} tensor names is the network's (it has {next(iter(state))}, the network "
                f"needs {missing[0]})"
            )
        elif shapes:
            key = shapes[0]
            detail = f"{key} is {list(state[key].shape)} there and {list(expected[key].shape)} in these params"
        elif missing:
            detail = f"it lacks {len(missing)} of the {len(expected)} tensors (first: {missing[0]})"
        else:
            detail = f"it has {len(unexpected)} tensors the network does not (first: {unexpected[0]})"
        raise MissingModelError(f"{path} does not fit {what} with these params: {detail}; {hint}")
    network.load_state_dict(state, strict=True)
