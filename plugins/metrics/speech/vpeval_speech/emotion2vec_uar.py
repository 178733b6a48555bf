"""The uar metric with `evaluator: emotion2vec`: emotion2vec+ from a local folder (vpeval_emotion2vec), scored as the
VoicePrivacy 2026 toolkit scores Track 2's emotion (evaluation/utility/ser/evaluate_ser.py, _eval_ser_emotion2vec,
e6810a4): each utterance's most probable of the 9 classes mapped onto ang / hap / neu / sad, utterances whose
reference is none of those four skipped, UAR = scikit-learn's macro recall (the labels of the references and the
predictions), and each class's accuracy. One row per set (`sets`, as the toolkit's emodata_track2_dev and _test),
after the pooled one; no interval (the toolkit reports none)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vpeval.content_cache import JsonCache, cache_key
from vpeval.data.fingerprint import file_hash
from vpeval.errors import MetricInputError
from vpeval.types import MetricResult, Utterance
from vpeval_speech.level import normalise_level

SAMPLE_RATE = 16000


def set_ids(folder: str) -> list[str]:
    """Utterance ids a Kaldi data folder's wav.scp lists, in its order."""
    wav_scp = Path(folder).expanduser() / "wav.scp"
    if not wav_scp.is_file():
        raise MetricInputError(
            f"The uar set {folder} has no wav.scp: give the toolkit's data folders (emodata_track2_dev)."
        )
    return [line.split(maxsplit=1)[0] for line in wav_scp.read_text(encoding="utf-8").splitlines() if line.strip()]


def emotion2vec_uar(metric, inputs) -> list[MetricResult]:
    """Pooled, then per-set rows for the original and the anonymized speech."""
    from sklearn.metrics import accuracy_score, recall_score

    from vpeval_emotion2vec.folder import IEMOCAP_LABELS

    params = metric.params
    original = inputs.original
    truth = {u.id: params.label_map.get(u.emotion, u.emotion) for u in original if u.emotion}
    kept = {uid: label for uid, label in truth.items() if label in IEMOCAP_LABELS}
    if not kept:
        raise MetricInputError(
            f"No utterance of corpus {original.name} has an emotion label among ang, hap, neu, sad (utt2emo, after "
            "label_map) for the emotion2vec evaluator."
        )
    groups = [(None, list(kept))] + [(Path(f).name, [u for u in set_ids(f) if u in kept]) for f in params.sets]
    common = {
        "evaluator": f"emotion2vec+ from {params.models} (FunASR), most probable of 9 classes mapped to ang/hap/neu/"
        f"sad with the {params.emotion2vec_map} map (vpc2026: the VPC 2026 toolkit's emotion2vec_ser.py); UAR = macro "
        "recall",
        "classes": list(IEMOCAP_LABELS),
        "skipped_no_emotion": len(original) - len(truth),
        "skipped_other_emotion": len(truth) - len(kept),
    }
    results = []
    speeches = [("original", original)] + ([("anonymized", inputs.anonymized)] if inputs.anonymized else [])
    for speech, corpus in speeches:
        heard = [corpus[uid] for uid in kept if uid in corpus]
        predicted = predictions(metric, heard, speech)
        for name, ids in groups:
            ids = [uid for uid in ids if uid in predicted]
            if not ids:
                continue
            ref = [kept[uid] for uid in ids]
            hyp = [predicted[uid] for uid in ids]
            per_class = {
                label: 100.0
                * accuracy_score([r for r in ref if r == label], [h for r, h in zip(ref, hyp) if r == label])
                for label in dict.fromkeys(ref)
            }
            details = {**common, "speech": speech, "utterances": len(ids), "per_class_accuracy": per_class}
            if name is not None:
                details |= {"dataset": name, "class": name}  # class: the core keeps one original row per class
            value = 100.0 * recall_score(y_true=ref, y_pred=hyp, average="macro")
            results.append(MetricResult(metric=metric.result_name, value=value, unit="%", details=details))
    return results


def predictions(metric, utterances: list[Utterance], speech: str) -> dict[str, str]:
    """The toolkit's label per utterance id, cached by audio content and the folder's weights."""
    from vpeval_emotion2vec import folder as e2v

    folder = str(Path(metric.params.models).expanduser().resolve())
    cache = JsonCache(metric.context.folder("emotion2vec"))
    weights = file_hash(str(Path(folder) / "model.pt"))
    model = None
    out = {}
    for utterance in metric.context.progress(utterances, total=len(utterances), description=f"uar: {speech}"):
        key = cache_key(file_hash(utterance.path), utterance.channel, weights, metric.params.level_normalization)
        entry = cache.get(key)
        if entry is None:
            model = model or e2v.load(folder, metric.context.device)
            audio = normalise_level(utterance.load(SAMPLE_RATE), metric.params.level_normalization)
            labels, scores = e2v.scores(model, np.asarray(audio, dtype=np.float32))
            entry = {"labels": labels, "scores": scores}
            cache.put(key, entry)
        out[utterance.id] = e2v.toolkit_label(entry["labels"], entry["scores"], e2v.MAPS[metric.params.emotion2vec_map])
    return out
