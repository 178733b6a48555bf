"""The prepared packed layers (vpeval_torch.packed) equal speechbrain's modules run on one utterance at a time.

The asv and speechbrain plugins' tests compare whole networks; these check each rewritten piece on its
own, with batch norms whose running statistics and affine weights are far from the identity (negative
scales too), and with utterances of 1 to 3 frames at every dilation ECAPA uses, where the reflected taps are all edge.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from vpeval_torch.fbank import FbankFeatures
from vpeval_torch.packed import (
    Packing,
    _AttentivePooling,
    _BandedProduct,
    _reflect,
    _SERes2Net,
    _Tdnn,
    packed_features,
)

SHORT = [1, 2, 3, 5, 9, 40]  # frames per utterance: all-edge ones first


def _randomise_norms(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    generator = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm1d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=generator) * 0.5)
            m.running_var.copy_(torch.rand(m.num_features, generator=generator) * 1.5 + 0.5)
            m.weight.data.copy_(torch.randn(m.num_features, generator=generator))  # some negative scales
            m.bias.data.copy_(torch.randn(m.num_features, generator=generator) * 0.5)
    return module.eval()


def _each_alone(module, x: torch.Tensor, packing: Packing) -> torch.Tensor:
    """speechbrain's channels-first module on each utterance's rows, packed again as rows."""
    return torch.cat([module(part.t().unsqueeze(0))[0].t() for part in packing.parts(x)])


def _old_taps(packing: Packing, kernel: int, dilation: int) -> torch.Tensor:
    """The reflection computed for every row (what the edge-only fast path must reproduce)."""
    half = dilation * (kernel - 1) // 2
    offsets = torch.cumsum(packing.lengths, 0) - packing.lengths
    segment = torch.repeat_interleave(torch.arange(packing.batch), packing.lengths)  # each row's utterance
    local = torch.arange(packing.total) - offsets[segment]  # each row's frame within it
    positions = local.unsqueeze(1) - half + torch.arange(kernel) * dilation
    return (offsets[segment].unsqueeze(1) + _reflect(positions, packing.lengths[segment].unsqueeze(1))).reshape(-1)


@pytest.mark.parametrize("kernel,dilation", [(3, 1), (3, 2), (3, 3), (3, 4), (5, 1), (5, 3)])
def test_taps_reflect_near_the_ends_only_and_as_torch_pads(kernel, dilation):
    packing = Packing(SHORT + [1, 7])
    taps = packing.taps(kernel, dilation)
    assert torch.equal(taps, _old_taps(packing, kernel, dilation))
    half = dilation * (kernel - 1) // 2
    frames = torch.arange(packing.total, dtype=torch.float32)
    gathered = frames[taps].view(packing.total, kernel)
    for part, size in zip(packing.parts(gathered), packing.sizes):
        if size > half:  # where torch's reflect padding is defined (speechbrain's unbatched forward)
            start = sum(packing.sizes[: packing.sizes.index(size)])
            padded = F.pad(frames[start : start + size].view(1, 1, -1), (half, half), mode="reflect").view(-1)
            expected = padded.unfold(0, dilation * (kernel - 1) + 1, 1)[:, ::dilation]
            assert torch.equal(part, expected)


@pytest.mark.parametrize("kernel,dilation", [(1, 1), (3, 2), (3, 4), (5, 1)])
def test_prepared_tdnn_block_equals_speechbrain(kernel, dilation):
    from speechbrain.lobes.models.ECAPA_TDNN import TDNNBlock

    torch.manual_seed(kernel * 10 + dilation)
    block = _randomise_norms(TDNNBlock(12, 20, kernel, dilation), seed=dilation)
    sizes = SHORT if kernel == 1 else [n for n in SHORT if n > dilation * (kernel - 1) // 2]  # speechbrain's pad
    packing = Packing(sizes)
    x = torch.randn(packing.total, 12)
    with torch.no_grad():
        torch.testing.assert_close(_Tdnn(block)(x, packing), _each_alone(block, x, packing), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dilation", [2, 3, 4])
def test_in_place_se_res2net_block_equals_speechbrain(dilation):
    from speechbrain.lobes.models.ECAPA_TDNN import SERes2NetBlock

    torch.manual_seed(dilation)
    block = _randomise_norms(SERes2NetBlock(32, 32, res2net_scale=8, se_channels=8, kernel_size=3, dilation=dilation))
    packing = Packing([n for n in SHORT if n > dilation] + [dilation + 1])
    x = torch.randn(packing.total, 32)
    with torch.no_grad():
        expected = _each_alone(block, x, packing)
        wide = torch.zeros(packing.total, 96)  # written into a column slice, as the MFA input is
        out = _SERes2Net(block)(x, packing, wide[:, 32:64])
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    assert wide[:, :32].abs().max() == 0 and wide[:, 64:].abs().max() == 0


@pytest.mark.parametrize("variant", ["positive scales", "leaky relu"])
def test_se_res2net_block_with_carried_biases_or_speechbrains_order_equals_speechbrain(variant):
    """ReLU blocks carry tdnn1's and the chunks' biases into tdnn2's (with all scales positive, each clamp
    is a plain maximum); a block with another activation runs speechbrain's order of operations."""
    from speechbrain.lobes.models.ECAPA_TDNN import SERes2NetBlock

    torch.manual_seed(11)
    activation = torch.nn.LeakyReLU if variant == "leaky relu" else torch.nn.ReLU
    block = SERes2NetBlock(32, 32, res2net_scale=8, se_channels=8, kernel_size=3, dilation=3, activation=activation)
    block = _randomise_norms(block)
    if variant == "positive scales":
        for module in block.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                module.weight.data.abs_()
    packing = Packing([n for n in SHORT if n > 3] + [4])
    x = torch.randn(packing.total, 32)
    with torch.no_grad():
        prepared = _SERes2Net(block)
        out = prepared(x, packing, torch.zeros(packing.total, 32))
        expected = _each_alone(block, x, packing)
    assert prepared.carried == (variant == "positive scales")
    if prepared.carried:
        assert prepared.tdnn1_bounds[1] is None and all(high is None for _, (_, high) in prepared.chunk_steps)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("score_gain,activation", [(1.0, "relu"), (200.0, "relu"), (1.0, "leaky relu")])
def test_pooling_with_the_mfa_norm_folded_in_equals_speechbrain(score_gain, activation):
    """200: a score range too wide for the fixed shift; leaky relu: an attention activation whose norm
    is not folded into the product."""
    from speechbrain.lobes.models.ECAPA_TDNN import AttentiveStatisticsPooling
    from speechbrain.nnet.normalization import BatchNorm1d

    torch.manual_seed(3)
    asp = _randomise_norms(AttentiveStatisticsPooling(24, attention_channels=16))
    if activation == "leaky relu":
        asp.tdnn.activation = torch.nn.LeakyReLU(0.1)
    asp.conv.conv.weight.data.mul_(score_gain)
    norm = _randomise_norms(BatchNorm1d(input_size=24), seed=5)
    packing = Packing(SHORT)
    relu_out = torch.randn(packing.total, 24).relu_()  # the MFA's output before its norm
    centre = norm.norm.running_mean.clone()  # PackedEcapa hands the pooling the MFA's output minus it
    pooling = _AttentivePooling(asp, norm, torch.float32, centre)
    assert pooling.bounded == (score_gain == 1.0)
    assert pooling.relu == (activation == "relu")
    with torch.no_grad():
        expected = torch.cat(
            [asp(norm(part.unsqueeze(0)).transpose(1, 2))[0, :, 0].unsqueeze(0) for part in packing.parts(relu_out)]
        )
        got = pooling(relu_out - centre, packing)
        uncentred = _AttentivePooling(asp, norm, torch.float32, torch.zeros_like(centre))(relu_out, packing)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(uncentred, expected, rtol=1e-4, atol=1e-5)


def test_banded_product_equals_the_dense_one():
    fbank = FbankFeatures(80).fbank.compute_fbanks
    columns = fbank.all_freqs_mat.shape[1]
    matrix = fbank._create_fbank_matrix(
        fbank.f_central.repeat(columns, 1).transpose(0, 1), fbank.band.repeat(columns, 1).transpose(0, 1)
    ).t()  # [80, 201], the mel triangles
    x = torch.rand(50, 201) * 100
    torch.testing.assert_close(_BandedProduct(matrix)(x), F.linear(x, matrix), rtol=1e-6, atol=1e-4)
    holes = torch.zeros(8, 12)
    holes[:2, 3:5], holes[6:, 10:] = 1.0, 2.0  # a group of rows that are all zeros
    y = torch.randn(5, 12)
    torch.testing.assert_close(_BandedProduct(holes, groups=4)(y), F.linear(y, holes))


@pytest.mark.parametrize("n_mels", [40, 80])
def test_packed_features_equal_fbank_features_at_frame_boundaries(n_mels):
    """Also: each filterbank keeps its own mel product (laid out once per filterbank and device), so
    two sizes in one process, in turn, each equal their own Fbank."""
    features, other = FbankFeatures(n_mels), FbankFeatures(120 - n_mels)
    generator = torch.Generator().manual_seed(0)
    waves = [torch.randn(n, generator=generator) * 0.1 for n in (400, 401, 559, 560, 719, 1000, 16000)]
    for module in (features, other, features):
        frames, packing = packed_features(module, waves)
        assert packing.sizes == [1 + n // 160 for n in (400, 401, 559, 560, 719, 1000, 16000)]
        expected = torch.cat([module(w.unsqueeze(0))[0] for w in waves])
        torch.testing.assert_close(frames, expected, rtol=0, atol=1e-4)  # dB, values of tens
