"""embed_batch (zero-padded, masked batches) equals embed of each utterance; the masks are what makes it so."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threedspeaker_testing import make_encoder, tiny_params, voice, write_checkpoint

from vpeval_3dspeaker.campplus import CAMPPlus
from vpeval_3dspeaker.eres2net import ERes2Net
from vpeval_3dspeaker.masking import segment_means

# Lengths across CAM++'s 100-frame segments, odd frame counts (the strides) and the shortest allowed.
SECONDS = [2.37, 0.11, 1.05, 0.6, 1.999, 0.3, 1.31]


@pytest.mark.parametrize("architecture", ["campplus", "eres2net"])
def test_embed_batch_equals_embed_of_each(tmp_path, architecture):
    folder = write_checkpoint(tmp_path / "m", architecture, "3dspeaker", seed=3)
    encoder = make_encoder(architecture, tiny_params(architecture, folder, batch_size=4), tmp_path)
    audios = [voice(s, speaker=k % 3, seed=k) for k, s in enumerate(SECONDS)]
    batched = encoder.embed_batch(audios)
    alone = np.stack([encoder.embed(a) for a in audios])
    assert batched.shape == (len(audios), encoder.dim)
    scale = np.abs(alone).max(axis=1, keepdims=True)
    assert np.abs(batched - alone).max() / scale.min() < 1e-4  # float rounding of other shapes only
    assert np.abs(alone[0] - alone[1]).max() > 1e-2 * scale.max()  # different inputs: different rows


@pytest.mark.parametrize("network", [lambda: CAMPPlus(16, 8, 4, 2, 8), lambda: ERes2Net(16, 8, 4, (1, 1, 1, 1))])
def test_padding_without_masks_would_change_the_short_rows(network):
    """The check above could fail: the same padded batch read as all real (no frame counts) gives the short
    row another embedding, in float64 where rounding is out of the question; with its frame counts, its own."""
    torch.manual_seed(0)
    net = network().double().eval()
    for m in net.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.running_mean.normal_()
    short, long = torch.randn(1, 41, 16, dtype=torch.float64), torch.randn(1, 230, 16, dtype=torch.float64)
    padded = torch.zeros(2, 230, 16, dtype=torch.float64)
    padded[0, :41], padded[1] = short[0], long[0]
    with torch.no_grad():
        alone = net(short)[0]
        masked = net(padded, torch.tensor([41, 230]))
        unmasked = net(padded)
    assert torch.allclose(masked[0], alone, atol=1e-10)
    assert torch.allclose(masked[1], net(long)[0], atol=1e-10)
    assert not torch.allclose(unmasked[0], alone, atol=1e-3)


def test_masked_segment_means_equal_the_published_avg_pool():
    """CAM++'s 100-frame segment pooling (avg_pool1d, ceil_mode): a partial last segment is its own frames' mean."""
    x = torch.randn(3, 5, 257, dtype=torch.float64)
    lengths = torch.tensor([257, 100, 131])
    batched = segment_means(x, lengths)
    for row, n in enumerate(lengths.tolist()):
        alone = segment_means(x[row : row + 1, :, :n], None)[0]
        assert torch.allclose(batched[row, :, :n], alone, atol=1e-12)
    last = x[2, :, 100:131].mean(dim=-1)
    assert torch.allclose(batched[2, :, 120], last, atol=1e-12)


def test_embed_corpus_equals_embed(tmp_path):
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "corpus", speakers=2, utterances=2, seconds=0.7)
    folder = write_checkpoint(tmp_path / "m", "campplus", "3dspeaker", seed=4)
    encoder = make_encoder("campplus", tiny_params("campplus", folder), tmp_path)
    vectors = encoder.embed_corpus(corpus)
    want = np.stack([encoder.embed(u.load(16000)) for u in corpus.utterances])
    np.testing.assert_array_equal(vectors, want)


def test_the_gpu_path_batches_and_caches_like_the_cpu_path(tmp_path, monkeypatch):
    """On a GPU embed_corpus batches in this process (cached_batches); faked here on the CPU: the same vectors,
    stored in the content cache and read back from it."""
    from vpeval.api import PluginContext
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "corpus", speakers=2, utterances=3, seconds=0.6)
    folder = write_checkpoint(tmp_path / "m", "eres2net", "3dspeaker", seed=9)
    cpu = make_encoder("eres2net", tiny_params("eres2net", folder), tmp_path).embed_corpus(corpus)
    monkeypatch.setattr(PluginContext, "on_gpu", property(lambda self: True))
    encoder = make_encoder("eres2net", tiny_params("eres2net", folder, batch_size=4), tmp_path)
    encoder.context.options = {"cache_root": str(tmp_path / "cache")}
    first = encoder.embed_corpus(corpus)
    np.testing.assert_allclose(first, cpu, rtol=1e-4, atol=1e-4 * np.abs(cpu).max())
    stored = list((tmp_path / "cache" / "content" / encoder.identity()).rglob("*.npy"))
    assert len(stored) == len(corpus.utterances)
    monkeypatch.setattr(type(encoder), "embed_batch", lambda self, audios: pytest.fail("not read from the cache"))
    np.testing.assert_array_equal(encoder.embed_corpus(corpus), first)
