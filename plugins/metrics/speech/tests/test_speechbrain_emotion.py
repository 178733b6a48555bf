"""uar's speechbrain evaluator: per-fold SpeechBrain wav2vec2 classifiers chosen by spk2fold, predictions equal
speechbrain's own foreign_class classifier, UAR computed as VPC 2024's evaluate_ser.py does."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vpeval.api import MetricInputs, PluginContext
from vpeval.errors import MetricInputError, MissingModelError
from vpeval.types import Corpus, Utterance
from vpeval_speech.speechbrain_emotion import (
    checkpoint_file,
    fold_folder,
    macro_recall,
    models_by_speaker,
    predictions,
)
from vpeval_speech.uar import UAR

torch = pytest.importorskip("torch")
metrics = pytest.importorskip("sklearn.metrics")
pytest.importorskip("speechbrain")

EMOTIONS = ("neu", "ang", "hap", "sad")
FOLDS = {"s0": "1", "s1": "1", "s2": "2", "s3": "2"}


def tone(rng, seconds):
    t = np.arange(int(16000 * seconds)) / 16000
    f0 = rng.uniform(80, 400)
    return (rng.uniform(0.05, 0.8) * np.sin(2 * np.pi * f0 * t * (1 + rng.uniform(-0.3, 0.3) * t))).astype(np.float32)


def corpus(folder: Path, seed: int) -> Corpus:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    utterances = []
    for speaker in FOLDS:
        for k in range(6):
            uid = f"{speaker}-{k}"
            path = folder / f"{uid}.wav"
            sf.write(path, tone(rng, rng.uniform(0.4, 0.8)) + rng.normal(0, 0.01, 1).astype(np.float32), 16000)
            utterances.append(Utterance(uid, speaker, str(path), emotion=EMOTIONS[(k + len(speaker)) % 4]))
    return Corpus(folder.name, utterances)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("emo-data")
    (root / "spk2fold").write_text("".join(f"{s} {f}\n" for s, f in FOLDS.items()))
    return corpus(root / "orig", 0), corpus(root / "anon", 1), root / "spk2fold"


def reference_labels(models: Path, utterances, tmp_path: Path) -> list[str]:
    """speechbrain's foreign_class with the folder's custom_interface.py (VPC 2024's loading), per speaker's fold."""
    from speechbrain.inference.interfaces import foreign_class

    classifiers, out = {}, []
    for u in utterances:
        fold = FOLDS[u.speaker]
        if fold not in classifiers:
            classifiers[fold] = foreign_class(
                source=str(models / f"fold_{fold}"),
                savedir=str(tmp_path / f"sb-{fold}"),
                pymodule_file="custom_interface.py",
                classname="CustomEncoderWav2vec2Classifier",
            )
            classifiers[fold].hparams.label_encoder.ignore_len()
        wav = torch.from_numpy(u.load(16000))[None]
        out.append(classifiers[fold].classify_batch(wav)[3][0])
    return out


def uar(tmp_path, **params) -> UAR:
    return UAR(UAR.Params(evaluator="speechbrain", bootstrap=50, **params), PluginContext(seed=0, work_dir=tmp_path))


def test_uar_equals_vpc2024_scoring_of_speechbrain_predictions(emotion_models, data, tmp_path):
    original, anonymized, spk2fold = data
    rows = uar(tmp_path / "w", models=str(emotion_models), spk2fold=str(spk2fold)).compute(
        MetricInputs(original=original, anonymized=anonymized)
    )
    results = [r for r in rows if "dataset" not in r.details]  # the pooled rows (then one per spk2fold folder)
    assert [r.details["speech"] for r in results] == ["original", "anonymized"]
    check_split_rows([r for r in rows if "dataset" in r.details], emotion_models, (original, anonymized), tmp_path)
    for result, speech in zip(results, (original, anonymized), strict=True):
        labels = reference_labels(emotion_models, speech.utterances, tmp_path)
        truth = [u.emotion for u in original.utterances]
        per_speaker = []
        for speaker in FOLDS:
            rows = [i for i, u in enumerate(original.utterances) if u.speaker == speaker]
            ref, hyp = [truth[i] for i in rows], [labels[i] for i in rows]
            expected = 100 * metrics.recall_score(ref, hyp, average="macro", zero_division=0)
            assert result.details["per_speaker"][speaker]["uar"] == pytest.approx(expected)
            per_speaker.append(expected)
        assert result.value == pytest.approx(np.mean(per_speaker))
        assert result.ci_low <= result.value <= result.ci_high
        assert result.details["fold_models"]["s2"].endswith("fold_2")
    labels = reference_labels(emotion_models, original.utterances, tmp_path)
    assert len(set(labels)) > 1  # not one constant label
    plugin = uar(tmp_path / "direct", models=str(emotion_models), spk2fold=str(spk2fold))
    folders, _ = models_by_speaker(emotion_models, spk2fold, list(FOLDS))
    assert predictions(plugin, original.utterances, folders, "original").tolist() == labels
    # The folds' models disagree somewhere, so a speaker scored by the wrong fold would not match the reference.
    other = {s: folders["s2" if FOLDS[s] == "1" else "s0"] for s in FOLDS}
    assert predictions(plugin, original.utterances, other, "original").tolist() != labels


def check_split_rows(rows, models: Path, speeches, tmp_path: Path) -> None:
    """evaluate_ser's rows, re-expressed: per spk2fold line, sklearn's macro recall and per-emotion accuracy of
    the speaker's utterances (rounded to 3 decimals), the split's value their mean; the ACC column order is the
    last speaker's emotions as they first come among its utterances sorted longest first."""
    original = speeches[0]
    truth = {u.id: u.emotion for u in original.utterances}
    assert [r.details["speech"] for r in rows] == ["original", "anonymized"]
    for row, speech in zip(rows, speeches, strict=True):
        labels = dict(zip((u.id for u in speech.utterances), reference_labels(models, speech.utterances, tmp_path)))
        expected, uars = [], []
        for speaker, fold in FOLDS.items():
            mine = sorted(
                (u for u in speech.utterances if u.speaker == speaker), key=lambda u: u.load().size, reverse=True
            )
            ref, hyp = [truth[u.id] for u in mine], [labels[u.id] for u in mine]
            value = round(100 * metrics.recall_score(ref, hyp, average="macro"), 3)
            accuracy = {}
            for emotion in dict.fromkeys(ref):
                pairs = [(r, h) for r, h in zip(ref, hyp) if r == emotion]
                accuracy[emotion] = round(100 * metrics.accuracy_score(*zip(*pairs)), 3)
            expected.append({"speaker": speaker, "fold": fold, "UAR": value, "accuracy": accuracy})
            uars.append(value)
        got = [{k: r[k] for k in ("speaker", "fold", "UAR", "accuracy")} for r in row.details["fold_rows"]]
        assert got == expected
        assert list(row.details["fold_rows"][-1]["accuracy"]) == row.details["accuracy_order"]
        assert row.value == pytest.approx(np.mean(uars), abs=1e-12)
        for emotion, value in row.details["per_class_accuracy"].items():
            assert value == pytest.approx(
                np.mean([e["accuracy"][emotion] for e in expected if emotion in e["accuracy"]])
            )


def test_predictions_use_each_speakers_fold(emotion_models, data, tmp_path):
    """Swapping the folds in spk2fold changes the model of every speaker (so the folds really differ)."""
    original, _, spk2fold = data
    swapped = tmp_path / "spk2fold"
    swapped.write_text("".join(f"{s} {'2' if f == '1' else '1'}\n" for s, f in FOLDS.items()))
    a = uar(tmp_path / "a", models=str(emotion_models), spk2fold=str(spk2fold)).compute(MetricInputs(original=original))
    b = uar(tmp_path / "b", models=str(emotion_models), spk2fold=str(swapped)).compute(MetricInputs(original=original))
    assert a[0].details["fold_models"]["s0"] != b[0].details["fold_models"]["s0"]
    # One classifier folder for everyone: models names it directly, no spk2fold.
    one = uar(tmp_path / "c", models=str(emotion_models / "fold_1")).compute(MetricInputs(original=original))
    assert set(one[0].details["fold_models"].values()) == {str(emotion_models / "fold_1")}


def test_errors_are_one_sentence(emotion_models, data, tmp_path):
    original, _, spk2fold = data
    with pytest.raises(MissingModelError, match="set the uar parameter spk2fold"):
        uar(tmp_path / "a", models=str(emotion_models)).compute(MetricInputs(original=original))
    with pytest.raises(MetricInputError, match="needs the parameter models"):
        uar(tmp_path / "b").compute(MetricInputs(original=original))
    renamed = Corpus("r", [u.replace(emotion={"neu": "neutral"}.get(u.emotion, u.emotion)) for u in original])
    with pytest.raises(MetricInputError, match=r"\['neutral'\] .* label_map"):
        uar(tmp_path / "c", models=str(emotion_models / "fold_1")).compute(MetricInputs(original=renamed))
    mapped = uar(tmp_path / "d", models=str(emotion_models / "fold_1"), label_map={"neutral": "neu"})
    assert mapped.compute(MetricInputs(original=renamed))[0].details["utterances"] == len(original)
    with pytest.raises(MissingModelError, match="No emotion classifier for fold 7"):
        fold_folder(emotion_models, "7")


def test_latest_ckpt_folder_and_hub_named_paths(emotion_models, tmp_path):
    models = tmp_path / "ser"
    for name in ("CKPT+1", "CKPT+12"):
        shutil.copytree(emotion_models / "fold_1", models / "fold_1" / name)
    assert fold_folder(models, "1").name == "CKPT+12"
    hub_path = {"model": "speechbrain/emotion-recognition-wav2vec2-IEMOCAP/model.ckpt"}
    assert checkpoint_file(emotion_models / "fold_1", "model", hub_path) == emotion_models / "fold_1" / "model.ckpt"


def test_macro_recall_is_sklearns():
    rng = np.random.default_rng(0)
    for _ in range(20):
        truth = rng.choice(list(EMOTIONS[:3]), size=12)
        predicted = rng.choice(list(EMOTIONS), size=12)
        expected = metrics.recall_score(truth, predicted, average="macro", zero_division=0)
        assert macro_recall(truth, predicted) == pytest.approx(expected)


def test_speechbrain_05_wav2vec2_name_and_arguments(emotion_models, data, tmp_path):
    """Older folders (speechbrain 0.5) name speechbrain.lobes.models.huggingface_wav2vec.HuggingFaceWav2Vec2
    with `pretrain`: the same lobe, the same predictions."""
    original, _, _ = data
    old = tmp_path / "old"
    shutil.copytree(emotion_models / "fold_1", old)
    text = (old / "hyperparams.yaml").read_text()
    text = text.replace(
        "speechbrain.lobes.models.huggingface_transformers.wav2vec2.Wav2Vec2",
        "speechbrain.lobes.models.huggingface_wav2vec.HuggingFaceWav2Vec2",
    ).replace("    freeze: True\n", "    freeze: True\n    pretrain: True\n", 1)
    assert "huggingface_wav2vec.HuggingFaceWav2Vec2" in text and "pretrain: True" in text
    (old / "hyperparams.yaml").write_text(text)
    a = uar(tmp_path / "a", models=str(emotion_models / "fold_1")).compute(MetricInputs(original=original))
    b = uar(tmp_path / "b", models=str(old)).compute(MetricInputs(original=original))
    assert a[0].value == b[0].value and a[0].details["per_speaker"] == b[0].details["per_speaker"]
