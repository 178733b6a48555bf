"""SpecAugment masks as configured; checkpoints round-trip through torch.load(weights_only=True)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.errors import MissingModelError
from vpeval.plugins import plugin_context
from vpeval.types import TrainingData, TrainingStage
from vpeval_dast.attacker import DastAttacker
from vpeval_dast.model import SpecAugment


def masked_spans(feats: torch.Tensor) -> tuple[int, int]:
    """(masked frames, masked mel channels) of one [T, F] crop whose unmasked values are never zero."""
    zero = feats == 0
    return int(zero.all(dim=1).sum()), int(zero.all(dim=0).sum())


def test_specaugment_masks_as_configured():
    feats = torch.rand(64, 200, 80) + 0.5
    augment = SpecAugment(freq_masks=2, freq_width=10, time_masks=3, time_width=15)
    out = augment(feats, torch.Generator().manual_seed(0))
    frames, channels = zip(*(masked_spans(crop) for crop in out))
    assert max(frames) <= 3 * 15 and max(channels) <= 2 * 10
    assert min(frames) < max(frames) and min(channels) < max(channels)  # widths are drawn per crop
    assert np.mean(frames) > 15 and np.mean(channels) > 8
    kept = out != 0
    torch.testing.assert_close(out[kept], feats[kept])  # the rest is untouched
    torch.testing.assert_close(augment(feats, torch.Generator().manual_seed(0)), out)  # seeded
    assert torch.equal(SpecAugment(0, 10, 0, 15)(feats, torch.Generator().manual_seed(0)), feats)


def test_specaugment_applies_in_training_only(train_corpus, tmp_path, tiny):
    attacker = DastAttacker(DastAttacker.Params(**tiny, fusion="fbank"), plugin_context(seed=0, work_dir=tmp_path))
    embedder = attacker._new_embedder()
    waves = torch.from_numpy(np.stack([u.load(16000)[:16000] for u in train_corpus.utterances[:2]]))
    plain, _ = embedder.inputs(waves)
    augmented, _ = embedder.inputs(waves, torch.Generator().manual_seed(1))
    assert (plain != 0).all() and (augmented == 0).any()


@pytest.fixture(scope="module")
def trained(train_corpus, tmp_path_factory, tiny_shared):
    folder = tmp_path_factory.mktemp("saved")
    attacker = DastAttacker(
        DastAttacker.Params(**{**tiny_shared, "fusion": "fbank"}), plugin_context(seed=1, work_dir=folder / "work")
    )
    attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
    attacker.save(folder / "model")
    return attacker, folder / "model"


def test_save_load_round_trip_uses_weights_only(trained, heldout, tmp_path, monkeypatch, tiny):
    attacker, folder = trained
    calls = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    restored = DastAttacker(DastAttacker.Params(**tiny, fusion="fbank"), plugin_context(seed=9, work_dir=tmp_path))
    restored.load(folder)
    assert calls and all(k.get("weights_only") is True for k in calls)
    sides = [heldout.utterances[:3], heldout.utterances[3:4]]
    np.testing.assert_allclose(restored.represent_many(sides), attacker.represent_many(sides), rtol=1e-5, atol=1e-6)
    assert restored.stages_done == ["I"] and (folder / "history.json").is_file()
    curve = attacker.training_curve()  # the report's training curve: stage I's epochs and losses
    assert curve and {e["stage"] for e in curve} == {"I"} and restored.training_curve() == curve


def test_validation_speakers_give_a_validation_eer_per_epoch_and_change_no_weight(
    trained, train_corpus, heldout, tmp_path, tiny_shared
):
    """The report's under-training alarm needs a validation EER per epoch: DAST scores the experiment's
    validation speakers after each epoch, and only scores them (its fixed epochs are the paper's)."""
    from vpeval.report.training import validation_points

    attacker, _ = trained
    checked = DastAttacker(
        DastAttacker.Params(**{**tiny_shared, "fusion": "fbank"}), plugin_context(seed=1, work_dir=tmp_path / "w")
    )
    checked.train(TrainingData([TrainingStage("original", train_corpus)], validation=heldout))
    curve = checked.training_curve()
    assert [e["epoch"] for e in curve] == [e["epoch"] for e in attacker.training_curve()]
    points = validation_points(curve)
    assert len(points) == len(curve) and all(0.0 <= p <= 1.0 for p in points) and len(set(points)) > 1
    assert [e["selected"] for e in curve] == [False] * (len(curve) - 1) + [True]  # fixed epochs: the last kept
    assert not any("validation_eer" in e for e in attacker.training_curve())  # none without validation speakers
    sides = [heldout.utterances[:3], heldout.utterances[3:4]]
    np.testing.assert_array_equal(checked.represent_many(sides), attacker.represent_many(sides))
    checked.save(tmp_path / "model")
    restored = DastAttacker(
        DastAttacker.Params(**tiny_shared, fusion="fbank"), plugin_context(seed=9, work_dir=tmp_path)
    )
    restored.load(tmp_path / "model")
    assert restored.training_curve() == curve


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")  # torch's note on the hostile file itself
def test_a_pickled_object_checkpoint_is_refused(trained, tmp_path, tiny):
    import pickle
    import shutil

    _, folder = trained
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    with open(bad / "network.pt", "wb") as f:
        pickle.dump({"not": object()}, f)
    restored = DastAttacker(DastAttacker.Params(**tiny, fusion="fbank"), plugin_context(seed=9, work_dir=tmp_path))
    with pytest.raises(MissingModelError, match="weights-only"):
        restored.load(bad)
    with pytest.raises(MissingModelError, match="network.pt and config.json"):
        restored.load(tmp_path / "nowhere")


def test_average_is_the_mean_of_embeddings_unless_unit_is_asked(trained, heldout, tmp_path, tiny):
    """Section 3.2 scores 'averaged enrollment and test embeddings': a side is the plain mean of its
    utterances' embeddings; `average: unit-embeddings` (vpeval's earlier default) averages unit vectors."""
    from vpeval_dast.embedding import length_normalise

    attacker, folder = trained
    assert DastAttacker.Params.model_fields["average"].default == "embeddings"
    side = heldout.utterances[:4]
    each = attacker.represent_many([[u] for u in side])
    np.testing.assert_allclose(attacker.represent_many([side])[0], each.mean(axis=0), rtol=1e-5, atol=1e-6)
    unit = DastAttacker(
        DastAttacker.Params(**tiny, fusion="fbank", average="unit-embeddings"),
        plugin_context(seed=9, work_dir=tmp_path),
    )
    unit.load(folder)
    expected = length_normalise(each).mean(axis=0)
    np.testing.assert_allclose(unit.represent_many([side])[0], expected, rtol=1e-5, atol=1e-6)
    assert np.abs(expected - each.mean(axis=0)).max() > 1e-4  # the two differ: the embeddings' norms differ
