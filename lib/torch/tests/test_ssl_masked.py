"""vpeval_torch.ssl_masked: a padded batch through a transformers wav2vec2 gives each waveform the frames it gets
alone, for the base models' group-norm CNN and the Large models' layer-norm one, with the CNN run per waveform
(the CPU's choice) and as one padded batch (elsewhere's). Tolerance 1e-5 on frames of unit scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval_torch.ssl_masked import conv_features, last_hidden_state, normalize, pad

transformers = pytest.importorskip("transformers")
LENGTHS = (4000, 11000, 7300, 16000)


@pytest.fixture
def model(tiny_wav2vec2):
    # norms and biases off their initial values, so every weight matters
    return lambda norm: tiny_wav2vec2(norm, perturb=("norm", "bias"))


@pytest.mark.parametrize("norm", ["group", "layer"])
@pytest.mark.parametrize("per_row", [True, False])
def test_batch_equals_each_waveform_alone(norm, per_row, model):
    net = model(norm)
    rng = np.random.default_rng(1)
    waves = [rng.normal(0, 0.1, n).astype(np.float32) for n in LENGTHS]
    with torch.no_grad():
        batch, lengths = pad(waves, "cpu")
        batch = normalize(batch, lengths, "zero-mean-unit-var")
        hidden, frames = last_hidden_state(net, batch, lengths, per_row=per_row)
        features = conv_features(net.feature_extractor, batch, lengths, per_row=per_row)
        for b, wave in enumerate(waves):
            one, length = pad([wave], "cpu")
            one = normalize(one, length, "zero-mean-unit-var")
            alone = net(one).last_hidden_state[0]  # transformers' own forward of the waveform alone
            n = int(frames[b])
            assert alone.shape[0] == n
            torch.testing.assert_close(hidden[b, :n], alone, rtol=0, atol=1e-5)
            own = net.feature_extractor(one)[0]
            torch.testing.assert_close(features[b, :, :n], own, rtol=0, atol=1e-5)
        # the group norm is what padding would move: transformers' own padded forward differs for the short ones
        if norm == "group":
            unmasked = net(batch).last_hidden_state[0, : int(frames[0])]
            assert (unmasked - hidden[0, : int(frames[0])]).abs().max() > 1e-3


@pytest.mark.parametrize("norm", ["group", "layer"])
def test_the_time_major_cnn_computes_the_feature_encoder(norm, model):
    """time_major_cnn (the CNN under CPU bf16 autocast) in fp32 gives transformers' frames to 1e-5; under autocast
    conv_features uses it in bf16 (within bf16's rounding of the fp32 frames), and without autocast conv_features
    is transformers' own forward, bit for bit."""
    from vpeval_torch.ssl_masked import time_major_cnn, time_major_follows

    net = model(norm)
    extractor = net.feature_extractor
    assert time_major_follows(extractor)
    rng = np.random.default_rng(2)
    waves = [rng.normal(0, 0.1, n).astype(np.float32) for n in LENGTHS]
    with torch.no_grad():
        batch, lengths = pad(waves, "cpu")
        plain = conv_features(extractor, batch, lengths)
        with torch.autocast("cpu", torch.bfloat16):
            reduced = conv_features(extractor, batch, lengths)
        for b, n in enumerate(LENGTHS):
            own = extractor(batch[b : b + 1, :n])[0]
            frames = own.shape[-1]
            assert torch.equal(plain[b, :, :frames], own)
            torch.testing.assert_close(time_major_cnn(extractor, batch[b : b + 1, :n], torch.float32)[0], own,
                                       rtol=0, atol=1e-5)  # fmt: skip
            error = (reduced[b, :, :frames].float() - own).abs().max() / own.abs().max()
            assert reduced.dtype == torch.bfloat16 and 0 < error < 0.05  # bf16 keeps 8 bits: about 0.4 % per value


@pytest.mark.parametrize("affine", [True, False])
def test_group_normed_product_is_the_group_norm_of_the_product(affine):
    """The first block's per-channel GroupNorm over time folded into its weights gives F.group_norm of the product."""
    from vpeval_torch.ssl_masked import group_normed_product

    generator = torch.Generator().manual_seed(3)
    rows, weight, bias = (torch.randn(*shape, generator=generator) for shape in ((700, 10), (10, 6), (6,)))
    norm = torch.nn.GroupNorm(6, 6, affine=affine)
    if affine:
        with torch.no_grad():
            norm.weight.normal_(generator=generator), norm.bias.normal_(generator=generator)
    folded_weight, folded_bias = group_normed_product(rows, weight, bias, norm)
    expected = norm((rows @ weight + bias).mT[None])[0].mT
    torch.testing.assert_close(rows @ folded_weight + folded_bias, expected, rtol=1e-5, atol=1e-5)
