"""uar as the VPC recipes use it: spk2fold of two data folders (IEMOCAP_dev's and IEMOCAP_test's) merged,
and `enabled: false` (the recipes' UTILITY=false) giving no rows and checking no path instead of failing."""

from __future__ import annotations

import logging

import pytest

from vpeval.api import MetricInputs, PluginContext
from vpeval.errors import MissingModelError
from vpeval.testing.dummies import make_corpus
from vpeval_speech.speechbrain_emotion import models_by_speaker
from vpeval_speech.uar import UAR


def test_disabled_uar_is_silent_about_missing_labels_and_paths(tmp_path, caplog):
    params = UAR.Params(enabled=False, evaluator="speechbrain", models=str(tmp_path / "absent"), spk2fold=["/no"])
    assert UAR.missing_paths(params) == []
    corpus = make_corpus(tmp_path / "audio", speakers=2, utterances=1, seconds=0.2)  # no emotion labels
    with caplog.at_level(logging.WARNING):
        assert UAR(params, PluginContext(seed=0, work_dir=tmp_path)).compute(MetricInputs(original=corpus)) == []
    assert "enabled is false" in caplog.text
    enabled = UAR.Params(evaluator="speechbrain", models=str(tmp_path / "absent"), spk2fold=["/no", "/nor"])
    assert len(UAR.missing_paths(enabled)) == 3  # the models folder and both spk2fold files


def test_spk2fold_files_are_merged(tmp_path):
    models = tmp_path / "ser"
    for fold in ("1", "2"):
        (models / f"fold_{fold}").mkdir(parents=True)
        (models / f"fold_{fold}" / "hyperparams.yaml").write_text("{}\n")
    (tmp_path / "dev").write_text("Ses01F 1\nSes01M 1\n")
    (tmp_path / "test").write_text("Ses02F 2\n")
    chosen, left_out = models_by_speaker(models, [tmp_path / "dev", tmp_path / "test"], ["Ses01F", "Ses02F", "x"])
    assert chosen == {"Ses01F": models / "fold_1", "Ses02F": models / "fold_2"} and left_out == ["x"]
    (tmp_path / "test").write_text("Ses01F 2\n")
    with pytest.raises(MissingModelError, match="gives speaker Ses01F fold 2, and an earlier spk2fold fold 1"):
        models_by_speaker(models, [tmp_path / "dev", tmp_path / "test"], ["Ses01F"])
