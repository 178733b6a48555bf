"""uar with evaluator emotion2vec on a tiny random-weight emotion2vec+ folder in the released layout (config.yaml,
model.pt, tokens.txt), loaded by FunASR's real AutoModel: the UAR per set equals what the VPC 2026 toolkit's
_eval_ser_emotion2vec computes on the same files. The toolkit's function is re-expressed below from
evaluation/utility/ser/evaluate_ser.py and emotion2vec_ser.py (e6810a4): FunASR reads each file path itself,
the most probable of the 9 classes is mapped with EMOTION2VEC_TO_IEMOCAP, UAR = recall_score(macro) * 100."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("funasr")

from vpeval.api import MetricInputs  # noqa: E402
from vpeval.types import Corpus  # noqa: E402
from vpeval_speech.uar import UAR  # noqa: E402

LABEL_MAP = {"neutral": "neu", "happy": "hap", "sad": "sad", "angry": "ang"}
# The toolkit's map, written out here from emotion2vec_ser.py (not imported from vpeval).
TOOLKIT = {"angry": "ang", "disgusted": "ang", "fearful": "sad", "happy": "hap", "neutral": "neu", "other": "neu",
           "sad": "sad", "surprised": "neu", "unknown": "neu"}  # fmt: skip


@pytest.fixture(scope="module")
def e2v_folder(tmp_path_factory):
    from vpeval_emotion2vec.tiny import tiny_folder

    return tiny_folder(tmp_path_factory.mktemp("emotion2vec_plus_large"))


def toolkit_uar(folder: Path, data: Path) -> tuple[float, dict[str, str]]:
    """_eval_ser_emotion2vec on one data folder with Emotion2vecSERClassifier.classify_file, re-expressed."""
    from funasr import AutoModel
    from sklearn.metrics import recall_score

    model = AutoModel(model=str(folder), disable_update=True)
    wav_scp = dict(line.split(" ", 1) for line in (data / "wav.scp").read_text().splitlines())
    utt2emo = dict(line.split(" ", 1) for line in (data / "utt2emo").read_text().splitlines())
    hyp, ref, predicted = [], [], {}
    for uttid, wav_path in wav_scp.items():
        if utt2emo.get(uttid) not in ("ang", "hap", "neu", "sad"):
            continue
        res = model.generate(str(wav_path), output_dir=None, granularity="utterance", extract_embedding=False)[0]
        best = int(np.argmax(np.array(res["scores"])))
        raw = res["labels"][best]
        raw = raw.split("/")[-1] if "/" in raw else raw
        raw = "unknown" if raw == "<unk>" else raw.lower().strip()
        predicted[uttid] = TOOLKIT.get(raw, "neu")
        hyp.append(predicted[uttid])
        ref.append(utt2emo[uttid])
    return round(recall_score(y_true=ref, y_pred=hyp, average="macro") * 100, 3), predicted


def kaldi(folder: Path, corpus: Corpus, speakers: set[str]) -> Path:
    folder.mkdir(parents=True)
    chosen = [u for u in corpus if u.speaker in speakers]
    (folder / "wav.scp").write_text("".join(f"{u.id} {u.path}\n" for u in chosen))
    (folder / "utt2emo").write_text("".join(f"{u.id} {LABEL_MAP[u.emotion]}\n" for u in chosen))
    return folder


def test_uar_per_set_equals_the_toolkit(tmp_path, e2v_folder, make_emotional_corpus, make_context):
    original = make_emotional_corpus(tmp_path / "orig", speakers=4, per_emotion=2, seed=1)
    anonymized = make_emotional_corpus(tmp_path / "anon", speakers=4, per_emotion=2, seed=7)
    sets = {"emodata_track2_dev": {"s0", "s1"}, "emodata_track2_test": {"s2", "s3"}}
    folders = {name: kaldi(tmp_path / "data" / name, original, spk) for name, spk in sets.items()}
    anon_folders = {name: kaldi(tmp_path / "data" / f"{name}_x", anonymized, spk) for name, spk in sets.items()}
    params = UAR.Params(
        evaluator="emotion2vec", models=str(e2v_folder), label_map=LABEL_MAP, sets=[str(f) for f in folders.values()]
    )
    assert UAR.missing_paths(params) == []
    metric = UAR(params=params, context=make_context(tmp_path))
    results = metric.compute(MetricInputs(original=original, anonymized=anonymized))

    rows = {(r.details["speech"], r.details.get("dataset")): r for r in results}
    labels = set()
    for name in sets:
        for speech, data in (("original", folders[name]), ("anonymized", anon_folders[name])):
            expected, predicted = toolkit_uar(e2v_folder, data)
            labels |= set(predicted.values())
            assert round(rows[speech, name].value, 3) == expected
    assert len(labels) >= 2  # the tiny model does not answer one class only: the comparison can fail
    pooled = rows["original", None]
    assert pooled.details["utterances"] == len(original) and pooled.details["skipped_other_emotion"] == 0


def test_validate_names_a_folder_without_weights(tmp_path):
    (tmp_path / "config.yaml").write_text("model: Emotion2vec\n")
    problems = UAR.missing_paths(UAR.Params(evaluator="emotion2vec", models=str(tmp_path)))
    assert len(problems) == 2 and "model.pt" in problems[0] and "tokens.txt" in problems[1]
