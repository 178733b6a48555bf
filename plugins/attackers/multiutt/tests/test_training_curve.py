"""multiutt's training curve (Attacker.training_curve): every stage's epochs with loss and validation EER and
the kept epoch, for the report's curves and its under-training alarm; the same after save and load."""

from __future__ import annotations

import json
import math

from vpeval.api import PluginContext
from vpeval.types import TrainingData, TrainingStage
from vpeval_multiutt.attacker import HISTORY, MultiUttAttacker
from vpeval_multiutt.params import CPU_TEST_SIZE

SMALL = {
    **CPU_TEST_SIZE,
    "system": "query-attention",
    "epochs": 1,
    "fusion_epochs": 2,
    "validation_target_trials": 4,
    "validation_nontarget_trials": 4,
}


def test_curve_after_train_and_after_load(train_corpus, heldout, tmp_path):
    attacker = MultiUttAttacker(MultiUttAttacker.Params(**SMALL), PluginContext(seed=1, work_dir=tmp_path / "w"))
    assert attacker.training_curve() == []  # nothing trained or loaded yet
    validation = heldout.with_speakers(heldout.speakers[:4])
    attacker.train(
        TrainingData([TrainingStage("original", train_corpus.with_speakers(train_corpus.speakers[:6]))], validation)
    )
    curve = attacker.training_curve()
    # two-stage query attention: the encoder's epochs, then the query's on the frozen encoder
    assert [(e["stage"], e["epoch"]) for e in curve] == [
        ("audio-mean", 1),
        ("fusion-query-attention", 1),
        ("fusion-query-attention", 2),
    ]
    assert all(set(e) == {"stage", "epoch", "loss", "validation_eer", "selected"} for e in curve)
    assert all(math.isfinite(e["loss"]) and 0.0 <= e["validation_eer"] <= 1.0 for e in curve)
    for stage in ("audio-mean", "fusion-query-attention"):  # one kept epoch per stage, its best
        epochs = [e for e in curve if e["stage"] == stage]
        kept = [e for e in epochs if e["selected"]]
        assert len(kept) == 1 and kept[0]["validation_eer"] == min(e["validation_eer"] for e in epochs)

    attacker.save(tmp_path / "saved")
    assert len(json.loads((tmp_path / "saved" / HISTORY).read_text())) == 3
    loaded = MultiUttAttacker(MultiUttAttacker.Params(**SMALL), PluginContext(seed=1, work_dir=tmp_path / "l"))
    loaded.load(tmp_path / "saved")
    assert loaded.training_curve() == curve
    # a folder saved without a history loads with no curve
    (tmp_path / "saved" / HISTORY).unlink()
    older = MultiUttAttacker(MultiUttAttacker.Params(**SMALL), PluginContext(seed=1, work_dir=tmp_path / "o"))
    older.load(tmp_path / "saved")
    assert older.training_curve() == []
