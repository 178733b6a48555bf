"""The soft content encoder: fairseq HuBERT weights in transformers' HubertModel, checked against a
transcription of fairseq's forward; the soft head's normalisation over time; frame counts."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from sslsas_testing import HIDDEN, KERNELS, LAYERS, UNITS, fairseq_hubert

from vpeval.errors import MissingModelError
from vpeval_sslsas.content import SoftContentEncoder, load_hubert, load_soft_encoder

STRIDES = (5, 2, 2, 2, 2, 2, 2)


def fairseq_forward(state: dict[str, torch.Tensor], wav: torch.Tensor, heads: int) -> torch.Tensor:
    """fairseq's HubertModel(features_only=True)["x"] in eval mode, written out: the default (group-norm)
    extractor, layer_norm, post_extract_proj, pos_conv (weight norm over dim 2, SamePad, GELU), the
    encoder's layer_norm (post-LN model), then post-LN transformer layers."""
    x = wav[:, None]
    for i, stride in enumerate(STRIDES):
        x = F.conv1d(x, state[f"feature_extractor.conv_layers.{i}.0.weight"], stride=stride)
        if i == 0:
            x = F.group_norm(
                x,
                x.shape[1],
                state["feature_extractor.conv_layers.0.2.weight"],
                state["feature_extractor.conv_layers.0.2.bias"],
            )
        x = F.gelu(x)
    x = x.transpose(1, 2)
    x = F.layer_norm(x, x.shape[-1:], state["layer_norm.weight"], state["layer_norm.bias"])
    x = F.linear(x, state["post_extract_proj.weight"], state["post_extract_proj.bias"])
    g, v = state["encoder.pos_conv.0.weight_g"], state["encoder.pos_conv.0.weight_v"]
    weight = g * v / v.norm(dim=(0, 1), keepdim=True)
    kernel = v.shape[2]
    conv = F.conv1d(
        x.transpose(1, 2),
        weight,
        state["encoder.pos_conv.0.bias"],
        padding=kernel // 2,
        groups=x.shape[-1] // v.shape[1],
    )
    if kernel % 2 == 0:
        conv = conv[:, :, :-1]  # SamePad
    x = x + F.gelu(conv).transpose(1, 2)
    x = F.layer_norm(x, x.shape[-1:], state["encoder.layer_norm.weight"], state["encoder.layer_norm.bias"])
    for layer in range(LAYERS):
        p = f"encoder.layers.{layer}."
        B, T, H = x.shape
        d = H // heads
        q = F.linear(x, state[p + "self_attn.q_proj.weight"], state[p + "self_attn.q_proj.bias"]) * d**-0.5
        k = F.linear(x, state[p + "self_attn.k_proj.weight"], state[p + "self_attn.k_proj.bias"])
        vv = F.linear(x, state[p + "self_attn.v_proj.weight"], state[p + "self_attn.v_proj.bias"])
        q, k, vv = (t.reshape(B, T, heads, d).transpose(1, 2) for t in (q, k, vv))
        attn = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ vv
        attn = F.linear(
            attn.transpose(1, 2).reshape(B, T, H),
            state[p + "self_attn.out_proj.weight"],
            state[p + "self_attn.out_proj.bias"],
        )
        x = F.layer_norm(
            x + attn, (H,), state[p + "self_attn_layer_norm.weight"], state[p + "self_attn_layer_norm.bias"]
        )
        ff = F.linear(
            F.gelu(F.linear(x, state[p + "fc1.weight"], state[p + "fc1.bias"])),
            state[p + "fc2.weight"],
            state[p + "fc2.bias"],
        )
        x = F.layer_norm(x + ff, (H,), state[p + "final_layer_norm.weight"], state[p + "final_layer_norm.bias"])
    return x


@pytest.fixture(scope="module")
def state():
    return fairseq_hubert(torch.Generator().manual_seed(3))


def test_hubert_equals_fairseqs_forward(state):
    model = load_hubert(state, Path("soft_model.pt")).eval()
    assert model.config.conv_kernel == list(KERNELS) and model.config.conv_stride == list(STRIDES)
    wav = torch.randn(2, 320 * 12, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = model(wav).last_hidden_state
        reference = fairseq_forward(state, wav, heads=max(1, HIDDEN // 64))
    torch.testing.assert_close(ours, reference, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [2, 5, 31])
def test_content_frames_for_320n_samples(state, n):
    """The CNN gives n - 1 frames for 320 n samples: the release pads one to reach n (then 2 n F0 frames)."""
    model = load_hubert(state, Path("soft_model.pt")).eval()
    with torch.no_grad():
        assert model(torch.randn(1, 320 * n)).last_hidden_state.shape[1] == n - 1


def test_soft_head_normalises_each_channel_over_time(state):
    """F.normalize's default dim=1 on [B, T, 768] is the frame axis. With W the identity, the logits are
    the features divided by each channel's norm over time: every channel has unit length over frames,
    while frames do not have unit length over channels."""
    model = load_hubert(state, Path("soft_model.pt")).eval()
    encoder = SoftContentEncoder(model, torch.eye(HIDDEN) * 3.0).eval()
    with torch.no_grad():
        logits = encoder(torch.randn(1, 320 * 10, generator=torch.Generator().manual_seed(2)))
    torch.testing.assert_close(logits.pow(2).sum(dim=1), torch.ones(1, HIDDEN))
    assert not torch.allclose(logits.pow(2).sum(dim=2), torch.ones(1, logits.shape[1]), atol=1e-3)


def test_soft_encoder_from_a_soft_model_state(state):
    W = torch.randn(UNITS, HIDDEN)
    encoder = load_soft_encoder({**{f"ssl_model.{k}": v for k, v in state.items()}, "W": W}, "", Path("s.pt"))
    assert encoder.units == UNITS
    with pytest.raises(MissingModelError, match="no soft content encoder"):
        load_soft_encoder({"W": W}, "", Path("s.pt"))


def test_an_unknown_key_is_one_sentence(state):
    with pytest.raises(MissingModelError, match=r"ssl_model\.encoder\.extra\.weight has no place"):
        load_hubert({**state, "encoder.extra.weight": torch.zeros(1)}, Path("soft_model.pt"))
    with pytest.raises(MissingModelError, match="no weight for HuBERT key"):
        load_hubert(
            {k: v for k, v in state.items() if not k.startswith("encoder.layers.0.fc2.bias")}, Path("soft_model.pt")
        )


def test_pretraining_heads_are_ignored(state):
    extra = {"label_embs_concat": torch.zeros(504, 256), "final_proj.weight": torch.zeros(256, HIDDEN)}
    load_hubert({**state, **extra}, Path("hubert.pt"))
