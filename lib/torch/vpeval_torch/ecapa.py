"""speechbrain's ECAPA-TDNN as the attackers build it, and its frame map (the frames before pooling).

Shared by the dast and multiutt attackers: both pool or fuse the frame-level output of the blocks and
the multi-layer feature aggregation (MFA) themselves, so they run the network only up to there.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

KERNELS = (5, 3, 3, 3, 1)  # speechbrain's ECAPA-TDNN recipe
DILATIONS = (1, 2, 3, 4, 1)


def ecapa_tdnn(
    input_size: int, channels: Sequence[int], attention_channels: int, embedding_dim: int = 192
) -> torch.nn.Module:
    """speechbrain's ECAPA_TDNN with the recipe's kernels and dilations (embedding_dim: its lin_neurons).

    The whole network is built, pooling and embedding layer included, even where a caller keeps only the
    blocks and the MFA: the random initialisation then draws the same numbers whichever parts are used.
    """
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN

    return ECAPA_TDNN(
        input_size,
        lin_neurons=embedding_dim,
        channels=list(channels),
        kernel_sizes=list(KERNELS),
        dilations=list(DILATIONS),
        attention_channels=attention_channels,
    )


def frame_map(network: torch.nn.Module, frames: torch.Tensor) -> torch.Tensor:
    """Frames [B, T, F] -> frame map [B, C, T]: the `blocks` and `mfa` of an ECAPA_TDNN (or of a module
    holding those two), as speechbrain's forward runs them before attentive statistics pooling.

    Unpadded input only: the SE blocks see no lengths, as in speechbrain's forward without lengths.
    """
    x = frames.transpose(1, 2)
    outputs = []
    for block in network.blocks:
        x = block(x)
        outputs.append(x)
    return network.mfa(torch.cat(outputs[1:], dim=1))
