"""Padded, masked embedding batches equal per-utterance embedding; checkpoints read on any map_location;
the run's device reaches every part."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval_dast.attacker import DastAttacker
from vpeval_dast.checkpoint import read_checkpoint, save_network

# Batched and per-utterance embeddings differ by float summation order only (masked pooling, the
# reflection each convolution reads past a row's end, the Fbank mean over real frames).
MAX_COSINE_DISTANCE = 1e-5


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """Utterances of very different lengths (0.12 s to 3.1 s, and one below the 0.1 s repetition floor)."""
    folder = tmp_path_factory.mktemp("uneven")
    parts = [make_corpus(folder / f"s{s}", speakers=2, utterances=2, seconds=s, seed=3) for s in (0.05, 0.12, 1.3, 3.1)]
    return [u for part in parts for u in part.utterances]


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return 1 - (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.mark.parametrize("fusion", ["fbank", "ssl", "raw", "mid"])
def test_batched_embeddings_equal_per_utterance(fusion, uneven, tiny_wavlm, tmp_path, tiny):
    params = DastAttacker.Params(
        **tiny, fusion=fusion, ssl={"kind": "wavlm", "path": str(tiny_wavlm)}, embed_batch_size=5
    )
    attacker = DastAttacker(params, plugin_context(seed=4, work_dir=tmp_path))
    attacker._embedder = attacker._new_embedder()
    embedder = attacker.embedder
    for module in embedder.network.modules():  # running statistics away from 0/1, so masking errors would show
        if isinstance(module, torch.nn.BatchNorm1d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    shuffled = [uneven[i] for i in np.random.default_rng(0).permutation(len(uneven))]
    batched = embedder.embed_utterances(shuffled)
    alone = np.stack([embedder.embed_audio(u.load(16000), u) for u in shuffled])
    assert _cosine_distance(batched, alone).max() <= MAX_COSINE_DISTANCE
    np.testing.assert_allclose(batched, alone, atol=1e-5 * np.abs(alone).max())


def test_batches_group_similar_lengths(uneven, tmp_path, tiny):
    """Length buckets: each batch holds the closest lengths, every utterance once."""
    attacker = DastAttacker(
        DastAttacker.Params(**tiny, fusion="fbank", embed_batch_size=2), plugin_context(seed=4, work_dir=tmp_path)
    )
    attacker._embedder = attacker._new_embedder()
    sizes = []
    real = attacker.embedder.embed_batch
    attacker.embedder.embed_batch = lambda audios, utts: (
        sizes.append(sorted(a.size for a in audios)) or real(audios, utts)
    )
    attacker.embedder.embed_utterances(uneven)
    assert sum(len(s) for s in sizes) == len(uneven) and max(len(s) for s in sizes) == 2
    flat = [n for s in sizes for n in s]
    assert flat == sorted(flat)  # batches are consecutive in length


def test_checkpoint_reads_on_another_map_location(tmp_path, tiny):
    attacker = DastAttacker(DastAttacker.Params(**tiny, fusion="fbank"), plugin_context(seed=4, work_dir=tmp_path))
    attacker._embedder = attacker._new_embedder()
    network = attacker.embedder.network
    save_network(tmp_path / "m", network, network.config, {}, ["I"])
    _, _, _, on_meta = read_checkpoint(tmp_path / "m", "test", map_location="meta")
    assert all(t.device.type == "meta" for t in on_meta.values())
    saved = torch.load(tmp_path / "m" / "network.pt", weights_only=True)  # saved from the CPU
    assert all(t.device.type == "cpu" for t in saved.values())


def test_every_part_follows_the_run_device(tmp_path, tiny, tiny_wavlm, monkeypatch):
    """The network, the Fbank module and the SSL model are moved to context.device ('meta' here stands for a
    GPU: a device other than the CPU that this machine has)."""
    moved = []
    real_to = torch.nn.Module.to
    monkeypatch.setattr(torch.nn.Module, "to", lambda self, *a, **k: moved.append(str(a[0])) or real_to(self, *a, **k))
    from vpeval_dast import ssl as ssl_module

    ssl_module._LOADED.clear()
    params = DastAttacker.Params(**tiny, fusion="mid", ssl={"kind": "wavlm", "path": str(tiny_wavlm)})
    attacker = DastAttacker(params, plugin_context(seed=4, work_dir=tmp_path, device="cpu"))
    attacker._embedder = attacker._new_embedder()
    assert moved.count("cpu") >= 3  # SSL model, network, Fbank
    assert DastAttacker.device_sensitive
    ssl_module._LOADED.clear()


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's note on the frontend's masks
def test_batched_embeddings_through_the_wavlm_frontend(uneven, tiny_wavlm, tmp_path, tiny):
    """With the paper's stream through the wavlm frontend the SSL states are batched too (the frontend's padded,
    masked encode_batch, equal to its per-waveform encode within 1e-5): still the per-utterance embeddings."""
    pytest.importorskip("vpeval_ssl_frontends")
    params = DastAttacker.Params(
        **tiny,
        fusion="mid",
        ssl={"kind": "frontend", "frontend": "wavlm", "frontend_params": {"model": str(tiny_wavlm)}},
        embed_batch_size=8,
    )
    attacker = DastAttacker(params, plugin_context(seed=4, work_dir=tmp_path))
    attacker._embedder = attacker._new_embedder()
    embedder = attacker.embedder
    assert (embedder.ssl.layers, embedder.ssl.dim, embedder.ssl.hop) == (3, 64, 320)
    batched = embedder.embed_utterances(uneven)
    alone = np.stack([embedder.embed_audio(u.load(16000), u) for u in uneven])
    assert _cosine_distance(batched, alone).max() <= 1e-4
