"""Fixtures shared by vpeval_torch's tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture(scope="session")
def tiny_wav2vec2() -> Callable:
    """A builder of a 2-layer, 32-wide random wav2vec2 (`norm`: "group" or "layer" feature encoder), in eval mode.

    The parameters whose names contain one of `perturb` are moved off their initial values (zeros, ones), so a
    test over them sees every one of them matter.
    """
    transformers = pytest.importorskip("transformers")
    import torch

    def build(norm: str, perturb: tuple[str, ...] = ("bias",)):
        config = transformers.Wav2Vec2Config(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=64,
            conv_dim=(16,) * 7,
            num_conv_pos_embeddings=8,
            num_conv_pos_embedding_groups=4,
            feat_extract_norm=norm,
            do_stable_layer_norm=norm == "layer",
        )
        torch.manual_seed(0)
        net = transformers.Wav2Vec2Model(config).eval()
        with torch.no_grad():
            for name, parameter in net.named_parameters():
                if any(part in name for part in perturb):
                    parameter.add_(0.1 * torch.randn_like(parameter))
        return net

    return build
