"""A tiny ECAPA trained on the dummy corpus: loss falls, held-out speakers are told apart, the best
epoch is kept, checkpoints round-trip (weights_only), the shared encoder and init_from reuse them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vpeval.api import PluginContext
from vpeval.errors import ConfigError, MissingModelError
from vpeval.plugins import plugin_context
from vpeval.stats import equal_error_rate
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage
from vpeval_asv.attacker import EcapaAttacker
from vpeval_asv.encoders import EcapaEncoder, XvectorEncoder

TRAIN_SPEAKERS = 16


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("asv"), speakers=TRAIN_SPEAKERS + 6, utterances=8, seconds=1.5, seed=0)


@pytest.fixture(scope="module")
def heldout(corpus):
    return corpus.with_speakers(corpus.speakers[TRAIN_SPEAKERS:])


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory, tiny_ecapa):
    attacker = EcapaAttacker(EcapaAttacker.Params(**tiny_ecapa), PluginContext(seed=1))
    attacker.train(TrainingData([TrainingStage("original", corpus.with_speakers(corpus.speakers[:TRAIN_SPEAKERS]))]))
    folder = tmp_path_factory.mktemp("saved")
    attacker.save(folder)
    return attacker, folder


def heldout_eer(attacker, heldout) -> float:
    reps = attacker.represent_many([[u] for u in heldout.utterances])
    speakers = np.array([u.speaker for u in heldout.utterances])
    i, j = np.triu_indices(len(speakers), 1)
    scores = attacker.score(reps[i], reps[j])
    same = speakers[i] == speakers[j]
    return equal_error_rate(scores[same], scores[~same])


def test_training_lowers_the_loss(trained, tiny_ecapa):
    history = trained[0].training_result.history
    assert len(history) == tiny_ecapa["epochs"]
    assert history[-1].loss < 0.5 * history[0].loss


def test_trained_model_tells_heldout_speakers_apart(trained, heldout, tiny_ecapa):
    attacker, _ = trained
    untrained = EcapaAttacker(EcapaAttacker.Params(**tiny_ecapa), PluginContext(seed=1))
    untrained._embedder = untrained._fresh_embedder()  # the same initial weights training started from
    before, after = heldout_eer(untrained, heldout), heldout_eer(attacker, heldout)
    assert after < 0.35, f"held-out EER {after:.2%} is not clearly better than chance"
    assert after < before - 0.04, f"training did not help: {before:.2%} -> {after:.2%}"


def test_best_validation_epoch_is_kept(trained):
    attacker, folder = trained
    result = attacker.training_result
    eers = [r.validation_eer for r in result.history]
    assert all(e is not None for e in eers)
    assert result.best_epoch == int(np.argmin(eers)) + 1
    assert (folder / "history.json").is_file()


def test_save_load_gives_identical_vectors_and_uses_weights_only(trained, heldout, monkeypatch, tiny_ecapa):
    attacker, folder = trained
    calls = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    restored = EcapaAttacker(EcapaAttacker.Params(**tiny_ecapa), PluginContext(seed=99))
    restored.load(folder)
    assert calls and all(k.get("weights_only") is True for k in calls)
    sides = [heldout.utterances[:3], heldout.utterances[3:4]]
    # the same utterances to embed on both sides: the same packed batches, so the same bits
    attacker.embedder.forget()
    np.testing.assert_array_equal(restored.represent_many(sides), attacker.represent_many(sides))
    assert set(torch.load(folder / "embedding_model.pt", weights_only=True)) == set(
        attacker.embedder.model.state_dict()
    )
    # the report's training curve: every epoch with loss and validation EER, the same after loading
    curve = attacker.training_curve()
    assert curve and all({"epoch", "loss", "validation_eer", "selected"} <= set(e) for e in curve)
    assert sum(e["selected"] for e in curve) <= 1 and restored.training_curve() == curve


def test_side_is_the_mean_of_normalised_utterance_embeddings(trained, heldout):
    attacker, _ = trained
    utts = heldout.utterances[:3]
    single = attacker.represent_many([[u] for u in utts])
    np.testing.assert_allclose(np.linalg.norm(single, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(attacker.represent(utts), single.mean(axis=0), rtol=1e-6)


def test_shared_encoder_loads_the_checkpoint(trained, heldout, tmp_path, tiny_ecapa):
    attacker, folder = trained
    audio = heldout.utterances[0].load(16000)
    encoder = EcapaEncoder(EcapaEncoder.Params(checkpoint=str(folder)), PluginContext())
    vector = encoder.embed(audio)
    assert vector.shape == (tiny_ecapa["embedding_dim"],) and encoder.dim == tiny_ecapa["embedding_dim"]
    np.testing.assert_array_equal(vector, attacker.embedder.embed_audio(audio))
    with pytest.raises(MissingModelError, match="checkpoint"):
        EcapaEncoder(EcapaEncoder.Params(), PluginContext()).embed(audio)
    with pytest.raises(MissingModelError, match="no embedding_model.pt"):
        EcapaEncoder(EcapaEncoder.Params(checkpoint=str(tmp_path / "nowhere")), PluginContext()).embed(audio)
    with pytest.raises(MissingModelError, match="holds a ecapa model"):
        XvectorEncoder(XvectorEncoder.Params(checkpoint=str(folder)), PluginContext()).embed(audio)


def test_init_from_starts_from_the_checkpoint(trained, tiny_ecapa):
    attacker, folder = trained
    for path in (folder, folder / "embedding_model.pt"):
        tuned = EcapaAttacker(EcapaAttacker.Params(**tiny_ecapa, init_from=str(path)), PluginContext(seed=5))
        start = tuned._fresh_embedder().model.state_dict()
        for key, value in attacker.embedder.model.state_dict().items():
            assert torch.equal(start[key], value), key
    wider = {**tiny_ecapa, "channels": [64, 64, 64, 64, 192]}
    with pytest.raises(ConfigError, match="channels"):
        EcapaAttacker(EcapaAttacker.Params(**wider, init_from=str(folder)), PluginContext())._fresh_embedder()
    with pytest.raises(MissingModelError):
        EcapaAttacker(
            EcapaAttacker.Params(**tiny_ecapa, init_from=str(Path(folder) / "missing")), PluginContext()
        )._fresh_embedder()


def test_encoder_trains_itself_once_on_a_named_corpus(corpus, heldout, tmp_path, tiny_ecapa):
    import csv

    manifest = tmp_path / "train.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender"])
        for u in corpus.with_speakers(corpus.speakers[:TRAIN_SPEAKERS]).utterances:
            writer.writerow([u.path, u.speaker, u.gender or ""])
    params = EcapaEncoder.Params(
        train_corpus={"use": "manifest", "params": {"path": str(manifest)}}, train_params={**tiny_ecapa, "epochs": 6}
    )
    encoder = EcapaEncoder(params, plugin_context(seed=1, work_dir=tmp_path / "work"))
    vectors = np.stack([encoder.embed(u.load(16000)) for u in heldout.utterances])
    assert vectors.shape == (len(heldout), tiny_ecapa["embedding_dim"])
    # The network learned speakers: cosine EER on speakers it never saw is far below chance.
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    speakers = np.array([u.speaker for u in heldout.utterances])
    i, j = np.triu_indices(len(speakers), 1)
    scores = np.sum(unit[i] * unit[j], axis=1)
    assert equal_error_rate(scores[speakers[i] == speakers[j]], scores[speakers[i] != speakers[j]]) < 0.3
    # A second encoder with the same parameters and work folder loads the cached model.
    (model,) = (tmp_path / "work" / "trained").glob("*/embedding_model.pt")
    stamp = model.stat().st_mtime_ns
    again = EcapaEncoder(params, plugin_context(seed=1, work_dir=tmp_path / "work"))
    np.testing.assert_array_equal(again.embed(heldout.utterances[0].load(16000)), vectors[0])
    assert model.stat().st_mtime_ns == stamp
    with pytest.raises(MissingModelError, match="train_corpus needs `use"):
        EcapaEncoder(EcapaEncoder.Params(train_corpus={"params": {}}), PluginContext(work_dir=tmp_path)).embed(
            heldout.utterances[0].load(16000)
        )
