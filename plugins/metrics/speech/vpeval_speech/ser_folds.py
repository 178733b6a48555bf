"""VPC 2024's SER rows per IEMOCAP split and fold, as evaluation/utility/ser/evaluate_ser.py (400de3a) makes them.

For each data folder (its spk2fold file's folder: IEMOCAP_dev, IEMOCAP_test), then each anonymized copy, the
toolkit walks spk2fold line by line: one row per speaker-fold line over the folder's utterances of that speaker
(its `results_folds<suffix>.csv`), with the UAR (sklearn's macro recall, %) and each present emotion's accuracy
(%), both rounded to 3 decimals. The SER block of results_orig.txt is the mean of those rows per dataset, split
and speech (pandas' mean: an emotion a row lacks is left out of that emotion's mean, never rounded). Its
ACC_<emotion> columns are the emotions of the last row computed, in the order they first come among that
speaker's utterances sorted by length, longest first (FoldSERDataset; ties keep wav.scp's order): the last
speaker of the last folder's anonymized copy.

Each split's row here is one MetricResult after the pooled ones (details.dataset and class: the folder's name),
with the toolkit's fold rows (fold_rows), their means (value, per_class_accuracy) and that column order
(accuracy_order), predictions from speechbrain_emotion's cache (the classifications of the pooled rows).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import soundfile

from vpeval.types import MetricResult
from vpeval_speech.speechbrain_emotion import HPARAMS, macro_recall, models_by_speaker, predictions, read_spk2fold


def split_rows(metric, inputs) -> list[MetricResult]:
    """The per-split rows (original speech, then anonymized) of the speechbrain evaluator with spk2fold files."""
    params = metric.params
    files = [params.spk2fold] if isinstance(params.spk2fold, str) else list(params.spk2fold or [])
    models = Path(params.models).expanduser()
    if not files or (models / HPARAMS).is_file():
        return []
    paths = [Path(f).expanduser() for f in files]
    labelled = [u for u in inputs.original if u.emotion]
    folders, _ = models_by_speaker(models, paths, sorted({u.speaker for u in labelled}))
    labelled = [u for u in labelled if u.speaker in folders]
    truth = {u.id: params.label_map.get(u.emotion, u.emotion) for u in labelled}
    names = {truth[u.id]: u.emotion for u in labelled}  # classifier label -> the corpus' (utt2emo) name
    speeches = [("original", labelled)]
    if inputs.anonymized is not None:
        copies = [inputs.anonymized[u.id].replace(speaker=u.speaker) for u in labelled if u.id in inputs.anonymized]
        speeches.append(("anonymized", copies))
    out = []
    for speech, utterances in speeches:
        predicted = dict(zip((u.id for u in utterances), predictions(metric, utterances, folders, speech).tolist()))
        by_id = {u.id: u for u in utterances}
        for path in paths:
            rows = fold_rows(path, by_id, truth, predicted, names)
            if rows:
                out.append(_result(metric, speech, path.parent.name, rows))
    return out


def fold_rows(spk2fold: Path, by_id: dict, truth: dict, predicted: dict, names: dict) -> list[dict[str, Any]]:
    """evaluate_ser's rows for one folder: per spk2fold line (its order), that speaker's utterances of the folder
    (its wav.scp, else every utterance of the spk2fold's speakers) longest first."""
    wav_scp = spk2fold.parent / "wav.scp"
    listed = (
        [line.split(maxsplit=1)[0] for line in wav_scp.read_text(encoding="utf-8").splitlines() if line.strip()]
        if wav_scp.is_file()
        else list(by_id)
    )
    ids = [uid for uid in listed if uid in by_id and uid in predicted]
    frames = {uid: soundfile.info(str(by_id[uid].path)).frames for uid in ids}
    ids.sort(key=lambda uid: frames[uid], reverse=True)  # stable: ties keep wav.scp's order
    rows = []
    for speaker, fold in read_spk2fold(spk2fold).items():
        mine = [uid for uid in ids if by_id[uid].speaker == speaker]
        if not mine:
            continue
        ref = np.array([truth[uid] for uid in mine])
        hyp = np.array([predicted[uid] for uid in mine])
        accuracy = {}
        for label in dict.fromkeys(ref.tolist()):  # first appearance, as evaluate_ser's per_emo
            accuracy[names.get(label, label)] = round(100.0 * float(np.mean(hyp[ref == label] == label)), 3)
        uar = round(100.0 * macro_recall(ref, hyp), 3)
        rows.append({"speaker": speaker, "fold": fold, "utterances": len(mine), "UAR": uar, "accuracy": accuracy})
    return rows


def _result(metric, speech: str, dataset: str, rows: list[dict[str, Any]]) -> MetricResult:
    emotions = list(dict.fromkeys(e for r in rows for e in r["accuracy"]))
    per_class = {e: float(np.mean([r["accuracy"][e] for r in rows if e in r["accuracy"]])) for e in emotions}
    details = {
        "speech": speech,
        "dataset": dataset,
        "class": dataset,  # the core keeps one original-speech row per class
        "evaluator": "VPC 2024 evaluate_ser: per spk2fold line, the fold's classifier",
        "utterances": sum(r["utterances"] for r in rows),
        "fold_rows": rows,
        "per_class_accuracy": per_class,
        "accuracy_order": list(rows[-1]["accuracy"]),
    }
    value = float(np.mean([r["UAR"] for r in rows]))
    return MetricResult(metric.result_name, value, unit="%", details=details)
