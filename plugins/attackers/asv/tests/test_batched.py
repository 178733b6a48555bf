"""Packed batched embedding equals one utterance at a time; checkpoints load on any device; training
streams its crops from disk with memory that does not grow with the corpus."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import soundfile as sf
import torch

from vpeval.api import PluginContext
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage
from vpeval_asv.attacker import EcapaAttacker, XvectorAttacker
from vpeval_asv.checkpoint import load_weights, save_model
from vpeval_asv.embedding import Embedder
from vpeval_asv.encoders import EcapaEncoder
from vpeval_asv.models import ModelConfig, build_embedding_model

REAL_READ = sf.read
MAX_COSINE_DISTANCE = 1e-5  # the stated tolerance of batched against per-utterance embeddings
SMALL = {
    "ecapa": (40, (16, 16, 16, 16, 48), 16),
    "xvector": (24, (16, 16, 16, 16, 48), 16),
    "ecapa-wide": (80, (128, 128, 128, 128, 384), 192),  # the demo's widths
    "xvector-wide": (24, (128, 128, 128, 128, 384), 64),
}


def _embedder(architecture: str, seed: int = 0, **kwargs) -> Embedder:
    n_mels, channels, dim = SMALL[architecture]
    architecture = architecture.removesuffix("-wide")
    torch.manual_seed(seed)
    model = build_embedding_model(ModelConfig(architecture, n_mels, channels, dim))
    for module in model.modules():  # running statistics away from 0/1, so batch norm is really applied
        if isinstance(module, torch.nn.BatchNorm1d):
            module.running_mean.normal_(0, 0.3)
            module.running_var.uniform_(0.5, 2.0)
    return Embedder(ModelConfig(architecture, n_mels, channels, dim), model, **kwargs)


def _audios(lengths, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for n in lengths:
        t = np.arange(n) / 16000
        tone = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 300) * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
        out.append((tone + 0.05 * rng.standard_normal(n)).astype(np.float32))
    return out


def _cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return 1 - np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# very different lengths in one batch: 0.06 s to 6 s (speechbrain's reflect padding, which the unbatched
# forward runs, needs more frames than the largest padding: ECAPA's dilation 4 needs 0.04 s)
LENGTHS = [1000, 1600, 8000, 2001, 32000, 96000, 5000, 1120]


@pytest.mark.parametrize("architecture", ["ecapa", "xvector", "ecapa-wide", "xvector-wide"])
def test_one_packed_batch_equals_each_utterance_alone(architecture):
    embedder = _embedder(architecture)
    audios = _audios(LENGTHS)
    single = np.stack([embedder.embed_audio(a) for a in audios])
    batched = embedder.embed_batch(audios)
    assert batched.shape == single.shape == (len(LENGTHS), SMALL[architecture][2])
    assert _cosine_distance(single, batched).max() <= MAX_COSINE_DISTANCE
    np.testing.assert_allclose(batched, single, rtol=1e-4, atol=1e-5 * np.abs(single).max())


@pytest.mark.parametrize("architecture", ["ecapa", "xvector"])
def test_buckets_and_batch_limits_do_not_change_the_embeddings(architecture):
    audios = _audios(LENGTHS, seed=1)
    reference = np.stack([_embedder(architecture).embed_audio(a) for a in audios])
    for size, frames in [(1, None), (3, None), (64, 200), (64, 100_000)]:
        embedder = _embedder(architecture, batch_size=size, batch_frames=frames)
        buckets = embedder.buckets([a.size for a in audios])
        assert sorted(i for b in buckets for i in b) == list(range(len(audios)))
        assert all(len(b) <= size for b in buckets)
        assert _cosine_distance(reference, embedder.embed_many(audios)).max() <= MAX_COSINE_DISTANCE


@pytest.mark.parametrize("architecture", ["ecapa", "xvector"])
def test_the_kept_packed_network_follows_every_weight_change(architecture):
    """The packed layout is kept between calls and rebuilt when any weight or running statistic changes."""
    embedder = _embedder(architecture)
    audios = _audios(LENGTHS[:4], seed=2)
    first = embedder.embed_many(audios)
    network = embedder.packed_network()
    assert embedder.packed_network() is network  # nothing changed: the same layout
    np.testing.assert_array_equal(embedder.embed_many(audios), first)
    state = {k: v.clone() for k, v in embedder.model.state_dict().items()}
    with torch.no_grad():
        next(embedder.model.parameters()).mul_(1.5)  # an optimizer step's kind of in-place update
    changed = embedder.embed_many(audios)
    assert embedder.packed_network() is not network and _cosine_distance(first, changed).max() > 1e-4
    single = np.stack([embedder.embed_audio(a) for a in audios])
    assert _cosine_distance(single, changed).max() <= MAX_COSINE_DISTANCE
    embedder.model.load_state_dict(state)  # load_state_dict copies in place
    assert _cosine_distance(first, embedder.embed_many(audios)).max() <= 1e-12
    norm = next(m for m in embedder.model.modules() if isinstance(m, torch.nn.BatchNorm1d))
    norm.running_var.mul_(3.0)  # a buffer, as training's batch norms update them
    single = np.stack([embedder.embed_audio(a) for a in audios])
    assert _cosine_distance(single, embedder.embed_many(audios)).max() <= MAX_COSINE_DISTANCE
    assert _cosine_distance(first, single).max() > 1e-6


@pytest.mark.parametrize("architecture", ["ecapa", "ecapa-wide"])
def test_packed_ecapa_under_reduced_precision_stays_near_fp32(architecture):
    """A GPU runs the packed network under bf16 autocast; on this CPU the same branches run under the
    CPU's autocast (products in bf16, the softmax and moments in fp32), which GPU-less CI can test."""
    audios = _audios(LENGTHS, seed=3)
    reference = np.stack([_embedder(architecture).embed_audio(a) for a in audios])
    bf16 = _embedder(architecture, autocast=lambda: torch.autocast("cpu", dtype=torch.bfloat16))
    reduced = bf16.embed_many(audios)
    assert np.isfinite(reduced).all()
    distance = _cosine_distance(reference, reduced).max()
    assert 1e-9 < distance <= 1e-4  # bf16 products moved it (7e-6 measured), as far as the GPU test allows


def test_embed_max_seconds_cuts_both_ways_alike():
    embedder = _embedder("ecapa", max_seconds=0.5)
    audios = _audios([16000, 4000, 40000])
    single = np.stack([embedder.embed_audio(a) for a in audios])
    assert _cosine_distance(single, embedder.embed_many(audios)).max() <= MAX_COSINE_DISTANCE
    assert _cosine_distance(single[:1], embedder.embed_batch([audios[0][:8000]])).max() <= MAX_COSINE_DISTANCE


def test_packed_padding_reflects_at_each_utterances_own_ends():
    from vpeval_torch.packed import Packing

    packing = Packing([3, 5, 1])
    taps = packing.taps(3, 2).view(packing.total, 3)  # kernel 3, dilation 2: frames n-2, n, n+2
    rows = taps.tolist()
    # utterance 0 (rows 0-2): reflect(-2)=2, reflect(4)=0 within its own three frames
    assert rows[0] == [2, 0, 2] and rows[2] == [0, 2, 0]
    # utterance 1 (rows 3-7): frame 0 -> [2, 0, 2], frame 4 -> [2, 4, 2] (offset 3)
    assert rows[3] == [5, 3, 5] and rows[7] == [5, 7, 5]
    assert rows[8] == [8, 8, 8]  # a one-frame utterance repeats its frame
    reflected = torch.nn.functional.pad(torch.arange(5.0).view(1, 1, 5), (2, 2), mode="reflect").view(-1)
    assert [reflected[n] for n in range(0, 5)] == [2.0, 1.0, 0.0, 1.0, 2.0]


def test_encoder_embed_batch_equals_embed(tmp_path):
    n_mels, channels, dim = SMALL["ecapa"]
    config = ModelConfig("ecapa", n_mels, channels, dim)
    save_model(tmp_path, config, _embedder("ecapa").model)
    encoder = EcapaEncoder(EcapaEncoder.Params(checkpoint=str(tmp_path), embed_batch_size=3), PluginContext())
    assert EcapaEncoder.device_sensitive
    audios = _audios([4000, 16000, 1200, 30000])
    single = np.stack([encoder.embed(a) for a in audios])
    assert _cosine_distance(single, encoder.embed_batch(audios)).max() <= MAX_COSINE_DISTANCE


# -- checkpoints and devices ----------------------------------------------------------------------


def test_checkpoints_hold_cpu_tensors_and_load_onto_any_device(tmp_path):
    n_mels, channels, dim = SMALL["xvector"]
    config = ModelConfig("xvector", n_mels, channels, dim)
    model = _embedder("xvector").model
    save_model(tmp_path, config, model)
    state = torch.load(tmp_path / "embedding_model.pt", weights_only=True)
    assert all(t.device.type == "cpu" for t in state.values())
    _, here = load_weights(tmp_path, "test", expected=config)
    assert all(torch.equal(a, b) for a, b in zip(here.state_dict().values(), model.state_dict().values()))
    _, meta = load_weights(tmp_path, "test", device="meta")  # a device string path that is not the CPU
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    if torch.cuda.is_available():
        _, gpu = load_weights(tmp_path, "test", device="cuda")
        assert next(gpu.parameters()).is_cuda


def test_an_attacker_embeds_on_its_contexts_device(tmp_path):
    attacker = EcapaAttacker(
        EcapaAttacker.Params(channels=[16, 16, 16, 16, 48], embedding_dim=16, n_mels=40), PluginContext()
    )
    embedder = attacker._fresh_embedder()
    assert embedder.device == "cpu" and next(embedder.model.parameters()).device.type == "cpu"
    meta = EcapaAttacker(attacker.params, PluginContext(device="meta"))
    assert next(meta._fresh_embedder().model.parameters()).device.type == "meta"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("architecture", ["ecapa", "xvector"])
def test_batched_on_the_gpu_equals_the_cpu(architecture):
    audios = _audios(LENGTHS)
    cpu = _embedder(architecture).embed_many(audios)
    gpu = _embedder(architecture, device="cuda").embed_many(audios)
    assert _cosine_distance(cpu, gpu).max() <= 1e-4


# -- streaming training data ----------------------------------------------------------------------

STREAM = {
    "channels": [16, 16, 16, 16, 48],
    "embedding_dim": 16,
    "n_mels": 24,
    "epochs": 1,
    "batch_size": 8,
    "crop_seconds": 0.5,
    "lr_schedule": "constant",
    "validation_share": 0.0,
    "patience": None,
    "backend_utterances_per_speaker": 1,
    "loader_workers": 0,
}


def test_training_reads_only_crop_frames_from_disk(tmp_path, monkeypatch):
    from vpeval_asv.audio import crops_per_utterance
    from vpeval_torch import crops

    corpus = make_corpus(tmp_path, speakers=3, utterances=3, seconds=1.6, seed=0)
    read = []
    monkeypatch.setattr(crops.sf, "read", lambda *a, **k: read.append(k["frames"]) or REAL_READ(*a, **k))
    attacker = XvectorAttacker(XvectorAttacker.Params(**STREAM), PluginContext(seed=0))
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    segments = sum(crops_per_utterance(u.duration, 0.5) for u in corpus.utterances)
    assert len(read) == segments and set(read) == {8000}  # each read is one 0.5 s crop, never a whole file


def _epoch_peak_bytes(corpus) -> int:
    """Peak traced bytes of building the training segments and reading one epoch of crops, as training does."""
    from vpeval_asv.training import crop_segments, epoch_loader

    params = XvectorAttacker.Params(**STREAM)
    tracemalloc.start()
    segments = crop_segments(corpus.utterances, {s: i for i, s in enumerate(corpus.speakers)}, params.crop_seconds)
    for _waves, _labels in epoch_loader(segments, params, 16000, (0, 1), 0, "cpu", 0):
        pass
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_training_data_memory_is_flat_in_the_corpus_size(tmp_path):
    small = make_corpus(tmp_path / "small", speakers=4, utterances=4, seconds=2.0, seed=0)
    big = make_corpus(tmp_path / "big", speakers=8, utterances=8, seconds=2.0, seed=0)  # 4x the files
    small_peak, big_peak = _epoch_peak_bytes(small), _epoch_peak_bytes(big)
    corpus_bytes = len(big) * 2 * 16000 * 4  # the big corpus's float32 samples
    assert big_peak < 0.2 * corpus_bytes, f"the data path held {big_peak} bytes for a {corpus_bytes}-byte corpus"
    assert big_peak < 1.3 * small_peak + 50_000, f"peak memory grew from {small_peak} to {big_peak} bytes"


def test_training_batches_are_the_same_with_and_without_loader_workers(tmp_path):
    corpus = make_corpus(tmp_path, speakers=3, utterances=3, seconds=1.2, seed=3)

    def trained(workers):
        attacker = EcapaAttacker(
            EcapaAttacker.Params(**{**STREAM, "n_mels": 40, "loader_workers": workers}), PluginContext(seed=4)
        )
        attacker.train(TrainingData([TrainingStage("original", corpus)]))
        return attacker.embedder.model.state_dict()

    here, forked = trained(0), trained(2)
    assert all(torch.equal(here[k], forked[k]) for k in here)


def test_a_file_shorter_than_its_declared_duration_still_trains(tmp_path):
    corpus = make_corpus(tmp_path, speakers=2, utterances=3, seconds=0.6, seed=5)
    stretched = corpus.__class__(
        corpus.name, [u.replace(duration=3.0, sample_rate=16000) for u in corpus.utterances]
    )  # metadata promising 3 s: crops past the end are filled by repetition
    attacker = EcapaAttacker(EcapaAttacker.Params(**{**STREAM, "n_mels": 40}), PluginContext(seed=0))
    attacker.train(TrainingData([TrainingStage("original", stretched)]))
    assert np.isfinite(attacker.training_result.history[0].loss)
    assert sf.info(corpus.utterances[0].path).duration < 1.0
