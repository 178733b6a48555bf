"""The cheaper "same" padding gives speechbrain's values and gradients bit for bit."""

from __future__ import annotations

import pytest
import torch

from vpeval_asv.models import ModelConfig, _speechbrain_model, build_embedding_model
from vpeval_asv.padding import use_fast_padding


def forward_backward(model: torch.nn.Module, feats: torch.Tensor):
    model.train()
    torch.manual_seed(1)  # x-vector pooling draws noise from the global generator
    out = model(feats)
    (out.square().sum() + out.sum()).backward()
    return out.detach(), [p.grad.detach().clone() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("architecture,channels", [("ecapa", (16, 16, 16, 16, 48)), ("xvector", (16, 16, 16, 16, 48))])
@pytest.mark.parametrize("frames", [13, 61])
def test_fast_padding_is_bit_identical(architecture, channels, frames):
    config = ModelConfig(architecture, 20, channels, 8)
    torch.manual_seed(0)
    reference = _speechbrain_model(config)
    fast = use_fast_padding(_speechbrain_model(config))
    fast.load_state_dict(reference.state_dict())
    feats = torch.randn(4, frames, 20)
    out_ref, grads_ref = forward_backward(reference, feats)
    out_fast, grads_fast = forward_backward(fast, feats)
    assert torch.equal(out_ref, out_fast)
    assert len(grads_ref) == len(grads_fast) > 0
    assert all(torch.equal(a, b) for a, b in zip(grads_ref, grads_fast))


def test_built_models_use_it():
    from speechbrain.nnet.CNN import Conv1d

    model = build_embedding_model(ModelConfig("ecapa", 20, (16, 16, 16, 16, 48), 8))
    convs = [m for m in model.modules() if isinstance(m, Conv1d) and m.padding == "same"]
    assert convs and all("_manage_padding" in vars(m) for m in convs)
