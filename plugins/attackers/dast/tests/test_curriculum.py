"""The curriculum: Stage II data from anonymizer plugins (disjoint from the targets), Stage III on a share
of the target's speech, new heads and dropout per stage, and Stage III started from a saved Stage II."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from pydantic import ValidationError

from vpeval.errors import ConfigError, DataError
from vpeval.plugins import plugin_context
from vpeval.torchload import load_weights_only
from vpeval.types import TrainingData, TrainingStage
from vpeval_dast.attacker import DastAttacker
from vpeval_dast.checkpoint import load_into
from vpeval_dast.curriculum import convert_for_stage2, fraction_per_speaker
from vpeval_dast.training import muon_available

MCADAMS = {"use": "mcadams", "params": {"alpha_range": [0.7, 0.9]}}


def stage_params(tiny, **changes):
    quick = {"epochs": 2, "batch_size": 8, "grad_accumulation": 1}
    return DastAttacker.Params(
        **{
            **tiny,
            "stage1": {**quick, "dropout": 0.0},
            "stage2": {**quick, "dropout": 0.3, "optimizer": "muon"},
            "stage3": {**quick, "dropout": 0.3},
            **changes,
        }
    )


# -- Stage II / target overlap ----------------------------------------------------------------


def test_overlap_with_a_target_is_refused_naming_both():
    params = {"stages": ["I", "II", "III"], "stage2_anonymizers": [{"use": "mcadams"}, {"use": "world-shift"}]}
    errors = DastAttacker.check_experiment(params, {"mcadams(alpha=0.8)": ["mcadams"], "poolvc": ["poolvc"]})
    assert len(errors) == 1
    assert "mcadams" in errors[0] and "'mcadams(alpha=0.8)'" in errors[0] and "stage2_anonymizers[0]" in errors[0]
    assert DastAttacker.check_experiment(params, ["poolvc", "embedding"]) == []
    # a chain that contains a Stage II system is a target that saw it
    assert DastAttacker.check_experiment(params, {"chain": ["poolvc", "world-shift"]})
    # without Stage II nothing is converted, so nothing can overlap
    assert DastAttacker.check_experiment({**params, "stages": ["I", "III"]}, ["mcadams"]) == []


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"stages": ["III", "I"]}, "curriculum order"),
        ({"stages": []}, "at least one"),
        ({"stages": ["I", "II"]}, "stage2_anonymizers"),
        ({"stage3_fraction": 0.01}, "greater than or equal to 0.05"),
        ({"stage2_anonymizers": [{"use": "mcadams"}, {"use": "mcadams"}], "stages": ["II"]}, "same name"),
    ],
)
def test_bad_curriculum_parameters_are_refused(changes, message):
    with pytest.raises(ValidationError, match=message):
        DastAttacker.Params(**changes)


def test_paper_defaults_per_stage():
    with pytest.raises(ValidationError, match="list at least one anonymizer in stage2_anonymizers"):
        DastAttacker.Params()  # the paper's I+II+III needs conversion systems named
    p = DastAttacker.Params(stage2_anonymizers=[MCADAMS])
    assert p.stages == ["I", "II", "III"] and p.fusion == "mid" and p.n_mels == 80 and p.lr == 1e-3
    assert (p.stage_epochs("I"), p.stage_epochs("II"), p.stage_epochs("III")) == (1, 2, 2)
    fractions = [DastAttacker.Params(stages=["III"], stage3_fraction=f).stage_epochs("III") for f in (0.5, 0.2, 0.05)]
    assert fractions == [4, 6, 6]
    assert (p.stage1.dropout, p.stage2.dropout, p.stage3.dropout) == (0.0, 0.3, 0.3)
    assert (p.stage2.optimizer, p.stage3.batch_size, p.stage3.grad_accumulation) == ("muon", 32, 1)


def test_a_stage_given_in_part_keeps_that_stages_paper_settings():
    """stage3: {epochs: 30} once fell back to StageParams' generic batch 64 x 4 (2 optimizer steps per epoch on
    192 utterances) and stage2: {epochs: 20} to AdamW instead of the paper's Muon."""
    p = DastAttacker.Params(stages=["III"], stage1={"epochs": 3}, stage2={"epochs": 20}, stage3={"epochs": 30})
    assert (p.stage3.epochs, p.stage3.batch_size, p.stage3.grad_accumulation, p.stage3.dropout) == (30, 32, 1, 0.3)
    assert (p.stage2.epochs, p.stage2.optimizer, p.stage2.batch_size, p.stage2.grad_accumulation) == (20, "muon", 64, 4)
    assert (p.stage1.epochs, p.stage1.dropout, p.stage1.optimizer) == (3, 0.0, "adamw")
    assert DastAttacker.Params(stages=["III"], stage3={"batch_size": 16}).stage_epochs("III") == 2  # still per share


# -- stage data -------------------------------------------------------------------------------


def test_stage3_keeps_a_share_of_every_speaker(corpus):
    context = plugin_context(seed=4)
    kept = fraction_per_speaker(corpus, 0.34, context)  # 6 utterances each -> 3
    by_speaker = {}
    for u in kept:
        by_speaker.setdefault(u.speaker, []).append(u.id)
    assert set(by_speaker) == set(corpus.speakers)
    assert all(len(ids) == 3 for ids in by_speaker.values())
    assert [u.id for u in fraction_per_speaker(corpus, 0.34, plugin_context(seed=4))] == [u.id for u in kept]
    assert [u.id for u in fraction_per_speaker(corpus, 0.34, plugin_context(seed=5))] != [u.id for u in kept]
    assert len(fraction_per_speaker(corpus, 0.05, context)) == len(corpus.speakers)  # at least one each


def test_stage2_converts_with_anonymizer_plugins_deterministically(train_corpus, tmp_path, tiny):
    small = train_corpus.with_speakers(train_corpus.speakers[:2])
    params = stage_params(tiny, stages=["II"], stage2_anonymizers=[MCADAMS])
    first = convert_for_stage2(small, params, plugin_context(seed=3, work_dir=tmp_path / "a"))
    again = convert_for_stage2(small, params, plugin_context(seed=3, work_dir=tmp_path / "b"))
    assert [u.speaker for u in first] == [u.speaker for u in small.utterances]  # labels: the source speakers
    assert all(u.id.startswith("mcadams/") for u in first)
    original, converted = sf.read(small.utterances[0].path)[0], sf.read(first[0].path)[0]
    assert converted.shape == original.shape and not np.allclose(converted, original, atol=1e-3)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(sf.read(a.path)[0], sf.read(b.path)[0])


def test_attackers_of_a_run_share_stage2_conversions(train_corpus, tmp_path, tiny):
    """In a run (cache_root set), a second attacker with Stage II reads the first one's conversions."""
    small = train_corpus.with_speakers(train_corpus.speakers[:2])
    params = stage_params(tiny, stages=["II"], stage2_anonymizers=[MCADAMS])
    options = {"cache_root": str(tmp_path / "cache")}
    first = convert_for_stage2(small, params, plugin_context(seed=3, work_dir=tmp_path / "a", options=options))
    written = {u.path: Path(u.path).stat().st_mtime_ns for u in first}
    second = convert_for_stage2(small, params, plugin_context(seed=3, work_dir=tmp_path / "b", options=options))
    assert [u.path for u in second] == [u.path for u in first]
    assert {u.path: Path(u.path).stat().st_mtime_ns for u in second} == written  # read, not written again
    assert [u.duration for u in second] == [u.duration for u in first]
    assert all(str(tmp_path / "cache") in u.path for u in first)
    other_seed = convert_for_stage2(small, params, plugin_context(seed=4, work_dir=tmp_path / "c", options=options))
    assert not {u.path for u in other_seed} & {u.path for u in first}  # other voices: other files


def test_stages_one_and_two_need_original_speech(train_corpus, tmp_path, tiny):
    attacker = DastAttacker(stage_params(tiny, stages=["I", "III"]), plugin_context(seed=1, work_dir=tmp_path))
    with pytest.raises(DataError, match="init_from"):
        attacker.train(TrainingData([TrainingStage("mcadams", train_corpus, "mcadams")], scenario="anonymized"))
    attacker = DastAttacker(stage_params(tiny, stages=["III"]), plugin_context(seed=1, work_dir=tmp_path))
    with pytest.raises(DataError, match="train_on: anonymized"):
        attacker.train(TrainingData([TrainingStage("original", train_corpus)]))


# -- the whole curriculum, and Stage III from a saved Stage II ------------------------------------


@pytest.fixture(scope="module")
def stage2_model(train_corpus, tmp_path_factory, tiny_shared):
    tmp = tmp_path_factory.mktemp("stage2")
    attacker = DastAttacker(
        stage_params(tiny_shared, stages=["I", "II"], stage2_anonymizers=[MCADAMS]),
        plugin_context(seed=2, work_dir=tmp / "work"),
    )
    # six speakers keep the McAdams conversions of Stage II short
    attacker.train(TrainingData([TrainingStage("original", train_corpus.with_speakers(train_corpus.speakers[:6]))]))
    attacker.save(tmp / "saved")
    return attacker, tmp / "saved"


def test_stages_run_in_order_with_their_settings(stage2_model):
    attacker, folder = stage2_model
    first, second = attacker.stage_records
    assert (first.stage, second.stage) == ("I", "II")
    assert second.utterances == first.utterances  # one converted copy per Stage II system
    assert ("muon" in second.optimizer) == muon_available() and first.optimizer == "adamw"
    dropouts = {m.p for m in attacker.embedder.network.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd)}
    assert dropouts == {0.3}  # Stage II's
    assert (folder / "stages" / "I" / "network.pt").is_file() and (folder / "stages" / "II" / "network.pt").is_file()
    assert attacker.stages_done == ["I", "II"]
    # Muon trained the convolutions as matrices; afterwards they have their usual shapes and names again
    before, after = (load_weights_only(folder / "stages" / s / "network.pt") for s in ("I", "II"))
    assert {k: v.shape for k, v in before.items()} == {k: v.shape for k, v in after.items()}
    if muon_available():
        assert "flattened convolutions" in second.optimizer


def test_stage3_starts_from_a_saved_stage2(stage2_model, train_corpus, heldout, tmp_path, tiny):
    _, folder = stage2_model
    target = heldout.with_speakers(heldout.speakers[:4])  # the target's speakers: none of Stage I/II's
    params = stage_params(tiny, stages=["III"], stage3_fraction=0.5)
    attacker = DastAttacker(params, plugin_context(seed=2, work_dir=tmp_path))
    attacker.init_from(folder / "stages" / "II")

    fresh = attacker._new_embedder().network
    load_into(fresh, folder / "stages" / "II", "test")
    saved = load_weights_only(folder / "stages" / "II" / "network.pt")
    assert not any("classifier" in k or "head" in k for k in saved)  # heads are never saved: each stage gets a new one
    for name, value in fresh.state_dict().items():
        torch.testing.assert_close(value, saved[name])

    attacker.train(TrainingData([TrainingStage("target", target, "target")], scenario="anonymized"))
    record = attacker.stage_records[-1]
    assert (record.stage, record.speakers, record.utterances) == ("III", 4, 12)  # new 4-way head, half the data
    assert attacker.stages_done == ["I", "II", "III"]
    changed = attacker.embedder.network.state_dict()
    assert any(not torch.equal(changed[k], saved[k]) for k in saved if saved[k].is_floating_point())


def test_init_from_another_shape_is_refused(stage2_model, tmp_path, tiny):
    _, folder = stage2_model
    attacker = DastAttacker(
        stage_params(tiny, stages=["I"], embedding_dim=24), plugin_context(seed=2, work_dir=tmp_path)
    )
    with pytest.raises(ConfigError, match="embedding_dim=16"):
        load_into(attacker._new_embedder().network, folder, "init_from")


def test_experiment_validation_checks_stage2_anonymizer_names():
    from vpeval.config import load_experiment_text

    text = """\
name: x
data:
  corpus: {use: synth, params: {preset: tiny}}
anonymizers: [{use: poolvc}]
attackers:
  - use: dast
    params: {stages: [I, II], stage2_anonymizers: [{use: mcadam}]}
"""
    with pytest.raises(ConfigError, match=r"line 7.*stage2_anonymizers\[0\]\.use.*did you mean 'mcadams'"):
        load_experiment_text(text, "exp.yaml")
    resolved = load_experiment_text(text.replace("mcadam}", "mcadams}"), "exp.yaml")
    assert resolved.attackers[0].plugin.params["stage2_anonymizers"][0]["use"] == "mcadams"


def test_validate_refuses_a_stage2_system_that_is_also_a_target():
    from vpeval.config import load_experiment_text

    text = """\
name: x
data:
  corpus: {use: synth, params: {preset: tiny}}
anonymizers: [{use: poolvc}, {use: mcadams, params: {alpha: 0.8}}]
attackers:
  - use: dast
    params: {stages: [I, II], stage2_anonymizers: [{use: mcadams}]}
"""
    with pytest.raises(ConfigError, match=r"exp\.yaml, line 7 \(attackers\[0\]\.params\).*mcadams"):
        load_experiment_text(text, "exp.yaml")
    load_experiment_text(text.replace(", {use: mcadams, params: {alpha: 0.8}}", ""), "exp.yaml")  # disjoint: valid


def test_stage2_conversion_pickles_for_spawned_workers(tmp_path):
    """Once CUDA has started the local executor spawns workers, which needs a picklable function (a closure
    would run in this process): the conversion of a Stage II system is one."""
    import pickle

    from vpeval.executor import start_method
    from vpeval_dast.curriculum import _Conversion

    context = plugin_context(seed=0, work_dir=tmp_path)
    convert = _Conversion(context.get("anonymizer", "mcadams", {}), tmp_path, "mcadams", "utterance", context)
    restored = pickle.loads(pickle.dumps(convert))
    assert type(restored.anonymizer).__name__ == type(convert.anonymizer).__name__ and restored.context.seed == 0
    assert start_method(convert) in ("fork", "spawn")  # never "run here" for want of pickling
