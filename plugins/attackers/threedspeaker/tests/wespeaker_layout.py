"""WeSpeaker's layout without WeSpeaker's code, which no package carries: its published tensor names and shapes
and its pooling's epsilon kept as facts (data/wespeaker_layout.json), and 3D-Speaker's packaged networks
(speakerlab), the same networks, under those names and with that pooling. Imported by the tests as
wespeaker_layout."""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from speakerlab.models.campplus.DTDNN import CAMPPlus

LAYOUT = json.loads((Path(__file__).parent / "data" / "wespeaker_layout.json").read_text())
_FUSED_BLOCK = re.compile(r"^(layer\d+\.\d+\.)fuse_models\.")
_BRANCH = re.compile(r"^(layer\d+\.\d+\.)(convs|bns)\.(\d+)\.")
_FIRST_BRANCH = {"convs": "conv2_1", "bns": "bn2_1"}


def published_shapes(architecture: str) -> dict[str, tuple[int, ...]]:
    """WeSpeaker's published tensor names and shapes (campplus at 512-d, eres2net at ERes2Net34_Base's widths)."""
    return {key: tuple(shape) for key, shape in LAYOUT["networks"][architecture]["tensors"].items()}


def wespeaker_names(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """3D-Speaker's tensor names as WeSpeaker's: a fused (AFF) block's first branch is conv2_1 / bn2_1 there and
    its others convs.0, ... (3D-Speaker's convs.1, ...); every other name is shared."""
    fused = {m.group(1) for key in state if (m := _FUSED_BLOCK.match(key))}
    out = {}
    for key, value in state.items():
        branch = _BRANCH.match(key)
        if branch and branch.group(1) in fused:
            index = int(branch.group(3))
            name = _FIRST_BRANCH[branch.group(2)] if index == 0 else f"{branch.group(2)}.{index - 1}"
            key = f"{branch.group(1)}{name}.{key[branch.end() :]}"
        out[key] = value
    return out


class TemporalStatsPool(torch.nn.Module):
    """WeSpeaker's TSTP: the mean and sqrt(unbiased variance + eps) over time (the last axis), channels flattened."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(dim=-1).flatten(start_dim=1)
        std = torch.sqrt(torch.var(x, dim=-1) + LAYOUT["pooling_eps"]).flatten(start_dim=1)
        return torch.cat((mean, std), 1)


def with_wespeaker_pooling(net: torch.nn.Module) -> torch.nn.Module:
    """The packaged network with WeSpeaker's pooling in its place (3D-Speaker's CAM++ adds no epsilon, its ERes2Net
    1e-8); measured bitwise equal to WeSpeaker's own code (commit dfa7419) at the tiny and the published sizes."""
    if isinstance(net, CAMPPlus):
        net.xvector.stats = TemporalStatsPool()
    else:
        net.pool = TemporalStatsPool()
    return net
