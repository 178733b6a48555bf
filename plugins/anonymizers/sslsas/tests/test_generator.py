"""The HiFi-GAN: the published state-dict key names and shapes, weight norm as torch's hook, lengths."""

from __future__ import annotations

import pytest
import torch

from vpeval_sslsas.generator import Generator, GeneratorConfig, WNConv1d

# configs/libri_tts_clean_100_fbank_xv_ssl_freeze.json, the generator's fields.
PUBLISHED = {
    "model_in_dim": 393,
    "resblock": "1",
    "upsample_rates": [5, 4, 2, 2, 2],
    "upsample_kernel_sizes": [11, 8, 4, 4, 4],
    "upsample_initial_channel": 512,
    "resblock_kernel_sizes": [3, 7, 11],
    "resblock_dilation_sizes": [[1, 3, 5], [1, 3, 5], [1, 3, 5]],
}
WN = ("weight_g", "weight_v", "bias")


def published_keys(ups: int, kernels: int, resblock: str) -> set[str]:
    """The generator's keys as models_test.py's Generator names them: conv_pre, ups.{i} (weight-normed
    ConvTranspose1d), resblocks.{i * kernels + j} with convs1.{0,1,2} and convs2.{0,1,2} (ResBlock1) or
    convs.{0,1} (ResBlock2), conv_post; each weight-normed conv has weight_g, weight_v and bias."""
    convs = ["conv_pre", "conv_post"] + [f"ups.{i}" for i in range(ups)]
    for block in range(ups * kernels):
        if resblock == "1":
            convs += [f"resblocks.{block}.convs1.{c}" for c in range(3)]
            convs += [f"resblocks.{block}.convs2.{c}" for c in range(3)]
        else:
            convs += [f"resblocks.{block}.convs.{c}" for c in range(2)]
    return {f"{conv}.{part}" for conv in convs for part in WN}


def test_published_config_key_names_and_shapes():
    generator = Generator(GeneratorConfig.from_json(PUBLISHED))
    state = generator.state_dict()
    assert set(state) == published_keys(5, 3, "1")
    assert len(state) == (2 + 5 + 15 * 6) * 3
    assert state["conv_pre.weight_v"].shape == (512, 393, 7)
    assert state["conv_pre.weight_g"].shape == (512, 1, 1)
    assert state["ups.0.weight_v"].shape == (512, 256, 11)  # ConvTranspose1d: [in, out, kernel]
    assert state["ups.0.weight_g"].shape == (512, 1, 1)  # weight_norm's dim 0: per input channel
    assert state["ups.4.weight_v"].shape == (32, 16, 4)
    assert state["resblocks.14.convs1.2.weight_v"].shape == (16, 16, 11)
    assert state["conv_post.weight_v"].shape == (1, 16, 7)
    assert GeneratorConfig.from_json(PUBLISHED).hop == 160


def test_resblock2_key_names():
    config = {**PUBLISHED, "resblock": "2", "upsample_initial_channel": 32, "resblock_dilation_sizes": [[1, 3]] * 3}
    assert set(Generator(GeneratorConfig.from_json(config)).state_dict()) == published_keys(5, 3, "2")


@pytest.mark.parametrize("transposed", [False, True])
def test_weight_norm_equals_torchs(transposed):
    """g and v loaded into torch's own weight-normed conv give the same output."""
    torch.manual_seed(0)
    ours = WNConv1d(6, 4, 5, stride=3 if transposed else 1, padding=1, transposed=transposed)
    with torch.no_grad():
        ours.weight_g.uniform_(0.5, 2.0)
        ours.bias.normal_()
    conv = torch.nn.ConvTranspose1d(6, 4, 5, stride=3, padding=1) if transposed else torch.nn.Conv1d(6, 4, 5, padding=1)
    conv = torch.nn.utils.parametrizations.weight_norm(conv, dim=0)
    conv.load_state_dict(
        {
            "bias": ours.bias,
            "parametrizations.weight.original0": ours.weight_g,
            "parametrizations.weight.original1": ours.weight_v,
        }
    )
    x = torch.randn(2, 6, 9)
    torch.testing.assert_close(ours(x), conv(x))


@pytest.mark.parametrize("frames", [1, 7, 23])
def test_output_length_is_frames_times_hop(frames):
    config = {
        **PUBLISHED,
        "model_in_dim": 11,
        "upsample_rates": [4, 2],
        "upsample_kernel_sizes": [8, 4],
        "upsample_initial_channel": 8,
        "resblock_kernel_sizes": [3],
        "resblock_dilation_sizes": [[1, 3, 5]],
    }
    generator = Generator(GeneratorConfig.from_json(config)).eval()
    with torch.no_grad():
        out = generator(torch.randn(1, 11, frames))
    assert out.shape == (1, 1, frames * 8)
    assert out.abs().max() < 1.0  # tanh


def test_malformed_config_is_refused():
    with pytest.raises(ValueError, match="resblock"):
        GeneratorConfig.from_json({**PUBLISHED, "resblock": "3"})
    with pytest.raises(KeyError):
        GeneratorConfig.from_json({k: v for k, v in PUBLISHED.items() if k != "upsample_rates"})
