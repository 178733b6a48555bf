"""emotion2vec+ indicator: a local folder read through FunASR (faked for the call checks; the real FunASR on a tiny
random-weight folder in the released layout at the end), the paper's 9 -> 4 class map, a weights-only check
before FunASR opens the checkpoint, clear errors."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from vpeval.errors import MissingModelError
from vpeval_embedding_anonymizers.compensation import EmotionCompensation
from vpeval_embedding_anonymizers.emotion2vec import Emotion2vecIndicator, folder_problems, four_class

LABELS = ["生气/angry", "厌恶/disgusted", "恐惧/fearful", "开心/happy", "中立/neutral", "其他/other", "难过/sad",
          "吃惊/surprised", "<unk>"]  # fmt: skip
EMOTIONS = ["happy", "neutral", "sad", "angry"]


def one_hot(label: str) -> list[float]:
    return [1.0 if lab == label else 0.0 for lab in LABELS]


def test_paper_class_map():
    assert four_class(LABELS, one_hot("厌恶/disgusted"), EMOTIONS) == "sad"
    assert four_class(LABELS, one_hot("恐惧/fearful"), EMOTIONS) == "sad"
    assert four_class(LABELS, one_hot("吃惊/surprised"), EMOTIONS) == "happy"
    assert four_class(LABELS, one_hot("其他/other"), EMOTIONS) == "neutral"
    assert four_class(LABELS, one_hot("<unk>"), EMOTIONS) == "neutral"
    assert four_class(LABELS, one_hot("生气/angry"), EMOTIONS) == "angry"
    # Mapped probabilities add up: fearful 0.3 + disgusted 0.3 (sad) outweigh happy 0.4.
    scores = [0.0, 0.3, 0.3, 0.4, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert four_class(LABELS, scores, EMOTIONS) == "sad"


@pytest.fixture
def folder(tmp_path):
    import torch

    path = tmp_path / "emotion2vec_plus_base"
    path.mkdir()
    torch.save({"w": torch.zeros(2)}, path / "model.pt")
    (path / "config.yaml").write_text("model: Emotion2vec\n")
    (path / "tokens.txt").write_text("\n".join(LABELS), encoding="utf-8")
    return path


@pytest.fixture
def fake_funasr(monkeypatch):
    calls = {}

    class AutoModel:
        def __init__(self, **kwargs):
            calls["init"] = kwargs

        def generate(self, audio, **kwargs):
            calls["generate"] = kwargs
            # Louder input reads as surprised (-> happy), quiet as fearful (-> sad).
            label = "吃惊/surprised" if np.abs(audio).max() > 0.5 else "恐惧/fearful"
            return [{"key": "x", "labels": LABELS, "scores": one_hot(label)}]

    monkeypatch.setitem(sys.modules, "funasr", types.SimpleNamespace(AutoModel=AutoModel))
    return calls


def test_reads_a_local_folder_through_funasr(folder, fake_funasr):
    indicator = Emotion2vecIndicator(str(folder), "cpu", EMOTIONS)
    assert fake_funasr["init"]["model"] == str(folder.resolve()) and fake_funasr["init"]["disable_update"]
    assert indicator.predict(np.full(1600, 0.9, np.float32)) == "happy"
    assert indicator.predict(np.full(1600, 0.1, np.float32)) == "sad"
    assert fake_funasr["generate"] == {"granularity": "utterance", "extract_embedding": False}


def test_a_checkpoint_with_code_is_refused_before_funasr_opens_it(folder, fake_funasr):
    (folder / "model.pt").write_bytes(b"\x80\x04cposix\nsystem\n.")
    with pytest.raises(MissingModelError):
        Emotion2vecIndicator(str(folder), "cpu", EMOTIONS)
    assert "init" not in fake_funasr


def test_missing_folder_files_and_package_are_one_sentence_each(tmp_path, folder, monkeypatch):
    assert "not a folder" in folder_problems(str(tmp_path / "nowhere"))[0]
    (folder / "config.yaml").unlink()
    assert folder_problems(str(folder)) == [
        f"emotion2vec_folder {folder} has no config.yaml (FunASR's emotion2vec+ layout: model.pt, config.yaml, "
        "tokens.txt)."
    ]
    (folder / "config.yaml").write_text("model: Emotion2vec\n")
    monkeypatch.setitem(sys.modules, "funasr", None)  # not installed
    with pytest.raises(MissingModelError, match="FunASR, which is not installed"):
        Emotion2vecIndicator(str(folder), "cpu", EMOTIONS)


def test_compensation_uses_it_when_a_folder_is_given(folder):
    assert EmotionCompensation.Params().indicator == "auto"
    ec = EmotionCompensation(EmotionCompensation.Params(emotion2vec_folder=str(folder)))
    assert ec.indicator == "emotion2vec"
    assert EmotionCompensation(EmotionCompensation.Params()).indicator == "prosody"  # the packaged fallback
    assert EmotionCompensation.missing_paths(EmotionCompensation.Params(emotion2vec_folder=str(folder))) == []
    problems = EmotionCompensation.missing_paths(EmotionCompensation.Params(indicator="emotion2vec"))
    assert problems and "emotion2vec_folder" in problems[0]


def test_the_real_funasr_loader_on_a_tiny_folder(tmp_path):
    """The loader the uar metric's emotion2vec evaluator uses, unfaked: the indicator's answer is the paper map of
    the 9 probabilities FunASR computes from the folder's weights."""
    pytest.importorskip("funasr")
    from vpeval_emotion2vec import folder as e2v
    from vpeval_emotion2vec.tiny import tiny_folder

    path = tiny_folder(tmp_path / "emotion2vec_plus_large")
    indicator = Emotion2vecIndicator(str(path), "cpu", EMOTIONS)
    t = np.arange(16000) / 16000
    answers = []
    for k in range(6):
        audio = np.sin(2 * np.pi * (100 + 150 * k) * t) * 0.3 + np.random.default_rng(k).normal(0, 0.05 * k, t.size)
        audio = audio.astype(np.float32)
        labels, scores = e2v.scores(e2v.load(str(path), "cpu"), audio)
        answers.append(indicator.predict(audio))
        assert answers[-1] == four_class(labels, scores, EMOTIONS)
    assert len(set(answers)) >= 2
