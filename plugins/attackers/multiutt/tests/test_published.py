"""The paper's recipe (seed 000, IV-A / IV-C) where it differs from the first version: the validation list and
model selection, the split of the validation speakers, the semi-informed recipe, weighted fusion before a
fusion layer, and two-stage query attention on a frozen encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.api import PluginContext
from vpeval.types import TrainingData, TrainingStage
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.fusion import ConcatFusion, WeightedConcatFusion
from vpeval_multiutt.params import CPU_TEST_SIZE
from vpeval_multiutt.training import BestEpoch, EpochRecord
from vpeval_multiutt.validation import ValidationTrials


def test_validation_list_has_the_papers_trials_per_speaker(heldout):
    trials = ValidationTrials.draw(heldout.utterances, 2, 100, 100, np.random.default_rng(0))
    speakers = sorted(heldout.speakers)
    assert len(trials.pairs) == 200 * len(speakers) and trials.target.sum() == 100 * len(speakers)
    enroll_speakers = [trials.sides[i][0].speaker for i in trials.pairs[:, 0]]
    test_speakers = [trials.sides[j][0].speaker for j in trials.pairs[:, 1]]
    assert [a == b for a, b in zip(enroll_speakers, test_speakers)] == trials.target.tolist()
    for side in trials.sides:
        assert len(side) == 2 and len({u.speaker for u in side}) == 1
    # enrollment and target sides of a speaker come from disjoint pools
    for s in speakers:
        enrolled = {u.id for i in trials.pairs[:, 0] for u in trials.sides[i] if u.speaker == s}
        tested = {u.id for j in trials.pairs[:, 1] for u in trials.sides[j] if u.speaker == s}
        assert enrolled and tested and enrolled.isdisjoint(tested)
    again = ValidationTrials.draw(heldout.utterances, 2, 100, 100, np.random.default_rng(0))
    assert (again.pairs == trials.pairs).all()
    assert (
        ValidationTrials.draw(heldout.with_speakers(speakers[:1]).utterances, 2, 5, 5, np.random.default_rng(0)) is None
    )
    # a perfect and a useless representation
    by_speaker = np.array([[float(side[0].speaker == s) for s in speakers] for side in trials.sides])
    assert trials.eer(by_speaker) == 0.0
    assert trials.eer(np.ones((len(trials.sides), 3))) >= 0.5


def test_model_selection_keeps_the_epoch_with_the_lowest_validation_eer():
    module = torch.nn.Linear(2, 2)
    eers = iter([0.30, 0.10, 0.20])
    best = BestEpoch(module, lambda: next(eers))
    records, weights = [], []
    for epoch in (1, 2, 3):
        with torch.no_grad():
            module.weight.fill_(float(epoch))
        records.append(EpochRecord("s", epoch, 1.0, 1e-3, 0.0))
        best.after_epoch(records[-1])
        weights.append(module.weight.clone())
    best.restore(PluginContext(), "s")
    assert torch.equal(module.weight, weights[1])
    assert [r.validation_eer for r in records] == [0.30, 0.10, 0.20]
    assert [r.selected for r in records] == [False, True, False]
    untouched = torch.nn.Linear(2, 2)
    state = {k: v.clone() for k, v in untouched.state_dict().items()}
    BestEpoch(untouched, None).restore(PluginContext(), "s")  # no validation: the last epoch stays
    assert all(torch.equal(v, untouched.state_dict()[k]) for k, v in state.items())


SMALL = {**CPU_TEST_SIZE, "transcripts": "corpus", "validation_target_trials": 10, "validation_nontarget_trials": 10}


def test_every_stage_validates_and_the_selected_epoch_is_its_best(train_corpus, heldout, tmp_path):
    """audio-text two-stage with 4 validation speakers: each stage scores every epoch on its own half of them
    and keeps its best epoch; the kept weights reproduce the recorded EER."""
    params = MultiUttAttacker.Params(
        **{
            **SMALL,
            "system": "audio-text",
            "epochs": 2,
            "validation_target_trials": 4,
            "validation_nontarget_trials": 4,
        }
    )
    attacker = MultiUttAttacker(params, PluginContext(seed=1, work_dir=tmp_path))
    validation = heldout.with_speakers(heldout.speakers[:4])
    base, fusion = attacker._validation_trials(TrainingData([], validation))
    base_speakers = {u.speaker for u in base.utterances}
    fusion_speakers = {u.speaker for u in fusion.utterances}
    assert len(base_speakers) == len(fusion_speakers) == 2 and base_speakers.isdisjoint(fusion_speakers)
    attacker.train(
        TrainingData([TrainingStage("original", train_corpus.with_speakers(train_corpus.speakers[:8]))], validation)
    )
    for stage in ("audio-frame-concat", "text", "fusion-audio-text"):
        records = [r for r in attacker.history.epochs if r.stage == stage]
        assert records and all(r.validation_eer is not None for r in records), stage
        kept = [r for r in records if r.selected]
        assert len(kept) == 1 and kept[0].validation_eer == min(r.validation_eer for r in records), stage
    final = attacker._validation[1].eer(
        attacker._represent_sides(attacker._validation[1].sides, lambda a, s: a.strategy.side(a, s), "check")
    )
    assert final == pytest.approx([r for r in attacker.history.epochs if r.selected][-1].validation_eer)


def test_systems_without_fusion_layers_use_every_speaker_and_one_validation_list(train_corpus, heldout):
    attacker = MultiUttAttacker(MultiUttAttacker.Params(**{**SMALL, "system": "frame-concat"}), PluginContext())
    base, fusion = attacker._split_speakers(train_corpus)
    assert base == fusion == list(train_corpus.utterances)  # base_share 0.65 applies to two-stage systems only
    trials = attacker._validation_trials(TrainingData([], heldout.with_speakers(heldout.speakers[:4])))
    assert trials[0] is trials[1]


def test_semi_informed_continues_at_the_papers_15_epochs_and_lr_1e4(train_corpus, tmp_path, monkeypatch):
    import vpeval_multiutt.training as training

    lazy = MultiUttAttacker(
        MultiUttAttacker.Params(**{**SMALL, "system": "query-attention", "epochs": 1, "fusion_epochs": 1}),
        PluginContext(seed=1, work_dir=tmp_path / "lazy"),
    )
    lazy.train(TrainingData([TrainingStage("original", train_corpus)]))
    lazy.save(tmp_path / "saved")
    semi = MultiUttAttacker(lazy.params.model_copy(update={"semi_epochs": 2}), PluginContext(seed=1, work_dir=tmp_path))
    semi.init_from(tmp_path / "saved")
    schedules = {}
    real = training.train_aam
    monkeypatch.setattr(training, "train_aam", lambda *a, **k: schedules.update({k["stage"]: k}) or real(*a, **k))
    semi.train(TrainingData([TrainingStage("anonymized", train_corpus)], scenario="anonymized"))
    assert {stage: (k["epochs"], k["lr"]) for stage, k in schedules.items()} == {
        "audio-mean": (2, 1e-4),
        "fusion-query-attention": (2, 1e-4),
    }
    assert MultiUttAttacker.Params().semi_epochs == 15 and MultiUttAttacker.Params().semi_lr == 1e-4


def test_weighted_fusion_weights_the_embeddings_before_the_fusion_layer():
    torch.manual_seed(0)
    plain = ConcatFusion(6, 5, 8, 4)
    weighted = {w: WeightedConcatFusion(6, 5, 8, 4, w) for w in ((0.5, 0.5), (0.2, 0.8), (1.0, 0.0))}
    for module in weighted.values():
        module.load_state_dict(plain.state_dict())  # the same layers: only the weights differ
    audio, text = torch.randn(3, 6), torch.randn(3, 5)
    with torch.no_grad():
        a, t = plain.audio(audio), plain.other(text)
        expected = plain.out(torch.cat([0.2 * a, 0.8 * t], dim=-1))
        torch.testing.assert_close(weighted[(0.2, 0.8)](audio, text), expected)
        assert not torch.allclose(weighted[(0.5, 0.5)](audio, text), weighted[(0.2, 0.8)](audio, text))
        audio_only = weighted[(1.0, 0.0)]
        torch.testing.assert_close(audio_only(audio, text), audio_only(audio, torch.randn(3, 5)))
    assert set(weighted[(0.2, 0.8)].state_dict()) == set(plain.state_dict())  # weights are not learned


def test_weighted_audio_text_trains_its_fusion_layer_on_frozen_encoders(train_corpus, heldout, tmp_path, eer_of):
    params = MultiUttAttacker.Params(
        **{**SMALL, "system": "audio-text", "fusion": "weighted", "fusion_weights": [0.2, 0.8], "epochs": 2}
    )
    attacker = MultiUttAttacker(params, PluginContext(seed=1, work_dir=tmp_path))
    attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
    assert isinstance(attacker.fusion, WeightedConcatFusion) and attacker.fusion.weights == (0.2, 0.8)
    assert {r.stage for r in attacker.history.epochs} == {"audio-frame-concat", "text", "fusion-audio-text"}
    assert np.isfinite(attacker.represent_many([heldout.utterances[:2]])).all()
