"""Validation split, early stopping, learning-rate schedules, back-ends end to end, bad input, seeds."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from pydantic import ValidationError

from vpeval.api import PluginContext
from vpeval.errors import DataError
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage
from vpeval_asv.attacker import EcapaAttacker, XvectorAttacker
from vpeval_asv.params import CPU_TEST_SIZE
from vpeval_asv.training import EarlyStopping, cyclic_lr, linear_lr
from vpeval_torch.validation import ValidationTrials, hold_out

TINY = CPU_TEST_SIZE


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("pieces"), speakers=6, utterances=6, seconds=0.8, seed=2)


def test_hold_out_splits_each_speaker_by_utterance(corpus):
    train, held = hold_out(corpus, 0.34, np.random.default_rng(0))
    assert {u.id for u in train}.isdisjoint({u.id for u in held})
    assert len(train) + len(held) == len(corpus)
    assert {u.speaker for u in held} == {u.speaker for u in train} == set(corpus.speakers)
    counts = {s: sum(u.speaker == s for u in held) for s in corpus.speakers}
    assert set(counts.values()) == {2}
    assert hold_out(corpus, 0.0, np.random.default_rng(0))[1] == []


def test_validation_trials_are_balanced_and_labelled(corpus):
    trials = ValidationTrials.draw(corpus.utterances, 40, 1000, np.random.default_rng(1))
    assert trials.target.sum() == 20 and (~trials.target).sum() == 20
    speakers = np.array([u.speaker for u in trials.utterances])
    np.testing.assert_array_equal(speakers[trials.first] == speakers[trials.second], trials.target)
    one_speaker = corpus.with_speakers(corpus.speakers[:1]).utterances
    assert ValidationTrials.draw(one_speaker, 40, 1000, np.random.default_rng(1)) is None


def test_early_stopping_keeps_the_best_and_waits_for_patience():
    stop = EarlyStopping(patience=2, min_epochs=3)
    decisions = [stop.update(e, eer) for e, eer in enumerate([0.3, 0.2, 0.25, 0.22, 0.21], start=1)]
    assert decisions == [(True, False), (True, False), (False, False), (False, True), (False, True)]
    assert stop.best_epoch == 2
    never = EarlyStopping(patience=None, min_epochs=1)
    assert [never.update(e, 0.5)[1] for e in range(1, 6)] == [False] * 5
    blind = EarlyStopping(patience=1, min_epochs=1)
    assert [blind.update(e, None) for e in (1, 2)] == [(True, False), (True, False)]


def test_schedules_match_speechbrain():
    from speechbrain.nnet.schedulers import CyclicLRScheduler, LinearScheduler

    sb = CyclicLRScheduler(base_lr=1e-8, max_lr=0.01, step_size=7)

    class Opt:
        param_groups = [{"lr": 0.01}]

    for iteration in range(1, 40):
        sb.on_batch_end(Opt)
        assert cyclic_lr(iteration, 1e-8, 0.01, 7) == pytest.approx(Opt.param_groups[0]["lr"])
    lin = LinearScheduler(initial_value=1e-3, final_value=1e-4, epoch_count=5)
    for epoch in range(1, 5):  # speechbrain sets epoch e+1's rate at the end of epoch e
        assert linear_lr(epoch + 1, 5, 1e-3, 1e-4) == pytest.approx(lin(epoch)[1])


def test_params_defaults_follow_the_voiceprivacy_recipes():
    ecapa, xvector = EcapaAttacker.Params(), XvectorAttacker.Params()
    assert (ecapa.n_mels, ecapa.embedding_dim, ecapa.loss, ecapa.margin, ecapa.scale) == (80, 192, "aam", 0.2, 30.0)
    assert (ecapa.epochs, ecapa.batch_size, ecapa.lr, ecapa.crop_seconds) == (10, 256, 0.01, 3.0)
    assert (xvector.n_mels, xvector.embedding_dim, xvector.loss, xvector.lr_schedule) == (24, 512, "softmax", "linear")
    with pytest.raises(ValidationError, match="5 values"):
        EcapaAttacker.Params(channels=[32, 32, 96])
    with pytest.raises(ValidationError, match="multiples of 8"):
        EcapaAttacker.Params(channels=[30, 30, 30, 30, 90])


def test_one_speaker_and_empty_sides_are_clear_errors(corpus):
    attacker = EcapaAttacker(EcapaAttacker.Params(**TINY), PluginContext())
    with pytest.raises(DataError, match="at least two speakers"):
        attacker.train(TrainingData([TrainingStage("original", corpus.with_speakers(corpus.speakers[:1]))]))
    attacker._embedder = attacker._fresh_embedder()
    with pytest.raises(DataError, match="no utterances"):
        attacker.represent_many([corpus.utterances[:1], []])


@pytest.mark.parametrize("cls", [EcapaAttacker, XvectorAttacker])
def test_seed_fixes_training_and_changes_it(cls, corpus, tmp_path):
    sides = [[u] for u in corpus.utterances[:4]]
    data = TrainingData([TrainingStage("original", corpus)], validation=corpus.with_speakers(corpus.speakers[:3]))
    outs = []
    for seed in (1, 1, 2):
        attacker = cls(cls.Params(**TINY), PluginContext(seed=seed))
        attacker.train(data)
        assert attacker.training_result.history[0].validation_eer is not None  # the given validation corpus
        outs.append(attacker.represent_many(sides))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.allclose(outs[0], outs[2])


def test_plda_and_as_norm_train_save_and_load(corpus, tmp_path):
    params = EcapaAttacker.Params(**TINY, backend="plda", plda_dim=4, as_norm=True, cohort_top_k=3)
    attacker = EcapaAttacker(params, PluginContext(seed=4))
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    assert attacker._backend.plda is not None and attacker._backend.cohort.shape == (6, 16)
    reps = attacker.represent_many([[u] for u in corpus.utterances[:6]])
    scores = attacker.score(reps[:3], reps[3:])
    attacker.save(tmp_path / "saved")
    restored = EcapaAttacker(params, PluginContext(seed=4))
    restored.load(tmp_path / "saved")
    np.testing.assert_allclose(restored.score(reps[:3], reps[3:]), scores)
    assert np.isfinite(scores).all()


def test_two_stages_train_on_both(corpus):
    """Semi-informed data arrives as stages; ecapa trains on all of them at once."""
    first = corpus.with_speakers(corpus.speakers[:3])
    second = corpus.with_speakers(corpus.speakers[3:])
    attacker = EcapaAttacker(EcapaAttacker.Params(**{**TINY, "epochs": 1}), PluginContext())
    records = []
    attacker.context.log.info = lambda msg, *args: records.append(msg % args)  # type: ignore[method-assign]
    attacker.train(TrainingData([TrainingStage("original", first), TrainingStage("converted", second, "x")]))
    assert any("of 6 speakers" in r for r in records)


def test_importing_the_plugin_module_does_not_import_torch():
    code = "import sys, vpeval_asv.plugin, vpeval_asv.attacker, vpeval_asv.encoders; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_recipe_cyclic_schedule_on_a_small_corpus_warns(caplog):
    from vpeval_asv.training import _warn_if_cyclic_lr_stays_low

    context = PluginContext()
    with caplog.at_level("WARNING", logger=context.log.name):
        _warn_if_cyclic_lr_stays_low(EcapaAttacker.Params(), 800, context, "ecapa")  # 10 epochs x 4 batches
        assert "never exceeds" in caplog.text
        caplog.clear()
        _warn_if_cyclic_lr_stays_low(EcapaAttacker.Params(cyclic_step_size=20), 800, context, "ecapa")
        _warn_if_cyclic_lr_stays_low(EcapaAttacker.Params(lr_schedule="constant"), 800, context, "ecapa")
        assert caplog.text == ""


def test_drop_short_lists_no_segment_for_utterances_shorter_than_a_crop(caplog):
    """As VoicePrivacy's prepare_csv (int(duration / crop) chunks per file); by default one repeated crop."""
    from vpeval.types import Utterance
    from vpeval_asv.training import crop_segments

    utterances = [
        Utterance(f"u{i}", "s", f"/x/u{i}.wav", sample_rate=16000, duration=d) for i, d in enumerate([0.4, 1.0, 2.5])
    ]
    count = lambda segments: [sum(s.path == u.path for s in segments) for u in utterances]  # noqa: E731
    assert count(crop_segments(utterances, {"s": 0}, 1.0)) == [1, 1, 2]
    assert count(crop_segments(utterances, {"s": 0}, 1.0, drop_short=True)) == [0, 1, 2]
    context = PluginContext(seed=0)
    short = make_corpus(context.folder("short"), speakers=2, utterances=3, seconds=0.3, seed=4)
    attacker = EcapaAttacker(EcapaAttacker.Params(**{**TINY, "drop_short": True, "validation_share": 0.0}), context)
    with pytest.raises(DataError, match="no training utterance is as long as one crop"):
        attacker.train(TrainingData([TrainingStage("original", short)]))


def test_keep_epoch_last_keeps_the_last_epoch_with_validation(corpus):
    """VoicePrivacy's evaluation loads the last epoch's checkpoint, whatever the validation said."""
    params = {**TINY, "epochs": 3, "validation_share": 0.34, "patience": None, "max_grad_norm": 5.0}
    attacker = EcapaAttacker(EcapaAttacker.Params(**params, keep_epoch="last"), PluginContext(seed=3))
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    result = attacker.training_result
    eers = [r.validation_eer for r in result.history]
    assert all(e is not None for e in eers) and min(eers) < eers[-1]  # "best" would keep another epoch
    assert result.best_epoch == 3
