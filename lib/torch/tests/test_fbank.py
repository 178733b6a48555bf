"""FbankFeatures is speechbrain's recipe pipeline, Fbank then sentence mean normalisation, bit for bit."""

import torch
from speechbrain.lobes.features import Fbank
from speechbrain.processing.features import InputNormalization

from vpeval_torch.fbank import FbankFeatures


def test_fbank_features_are_speechbrains_fbank_then_sentence_normalisation_bit_for_bit():
    waves = torch.randn(3, 16123, generator=torch.Generator().manual_seed(0)) * 0.1
    features = FbankFeatures(40)
    expected = InputNormalization(norm_type="sentence", std_norm=False)(Fbank(n_mels=40)(waves), torch.ones(3))
    out = features(waves)
    assert out.shape == (3, 101, 40) and torch.equal(out, expected)
    assert torch.allclose(out.mean(dim=1), torch.zeros(3, 40), atol=1e-5)  # each sentence's mean removed


def test_one_waveform_alone_gets_the_same_frames_as_in_a_batch():
    waves = torch.randn(2, 8000, generator=torch.Generator().manual_seed(1))
    features = FbankFeatures(24, sample_rate=8000)
    assert torch.equal(features(waves[1:]), features(waves)[1:])


def test_no_gradient_is_recorded():
    waves = torch.randn(1, 4000, requires_grad=True)
    assert not FbankFeatures(24)(waves).requires_grad
