"""UAR with SpeechBrain wav2vec2 emotion classifiers, as VoicePrivacy 2024's SER evaluation computes it.

A classifier folder is speechbrain/emotion-recognition-wav2vec2-IEMOCAP's layout (hyperparams.yaml with
wav2vec2, avg_pool, output_mlp, softmax, label_encoder; wav2vec2.ckpt, model.ckpt, label_encoder.txt),
built as data (speechbrain_folder.py); its custom_interface.py is never imported: what its
CustomEncoderWav2vec2Classifier.classify_batch does is done here (wav2vec2 without lengths, mean pooling,
the linear head, softmax, argmax, the label encoder). VPC 2024 (evaluation/utility/ser/evaluate_ser.py)
trains one classifier per IEMOCAP fold; `spk2fold` gives each speaker's fold, whose model (models/fold_<k>,
or its latest CKPT* folder) classifies that speaker's utterances one at a time. UAR is then, as there,
sklearn's macro recall per speaker (over the classes in its references and predictions), averaged over
speakers; per-emotion accuracy likewise. Each file is classified at its own rate, as evaluate_ser.py's
torchaudio.load hands it on (no resampling there): details count the files not at 16 kHz.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.errors import MetricInputError, MissingModelError
from vpeval_sbfolder.checkpoints import latest_checkpoint
from vpeval_speech.level import normalise_level
from vpeval_speech.speechbrain_folder import (
    WAV2VEC2,
    Graph,
    checkpoint_file,
    load_loadable,
    read_hparams,
    require_speechbrain,
)

HPARAMS = "hyperparams.yaml"
_LOCK = threading.Lock()


@dataclass
class EmotionClassifier:
    """The modules CustomEncoderWav2vec2Classifier.classify_batch runs, and the label encoder."""

    folder: Path
    wav2vec2: Any
    avg_pool: Any
    output_mlp: Any
    softmax: Any
    labels: list[str]  # index -> label, from label_encoder.txt

    def to(self, device: str) -> EmotionClassifier:
        for module in (self.wav2vec2, self.avg_pool, self.output_mlp, self.softmax):
            module.to(device).eval()
        return self

    def classify(self, audio: np.ndarray, device: str, autocast) -> str:
        """classify_batch of one waveform [1, T] at relative length 1: the label of the largest probability."""
        import torch

        wavs = torch.from_numpy(np.asarray(audio, dtype=np.float32))[None].to(device)
        lengths = torch.ones(1, device=device)
        with torch.no_grad(), autocast():
            outputs = self.wav2vec2(wavs)  # the interface passes no lengths to wav2vec2
            pooled = self.avg_pool(outputs.float(), lengths).view(1, -1)
            probabilities = self.softmax(self.output_mlp(pooled))
        return self.labels[int(torch.argmax(probabilities.float(), dim=-1)[0])]

    def batches_masked(self) -> bool:
        """Whether classify_many can run masked batches (speechbrain's wav2vec2 lobe on a transformers model)."""
        from vpeval_torch.ssl_masked import masked_lobe

        return masked_lobe(self.wav2vec2)

    def pooled_masked(self, audios: list[np.ndarray], device: str):
        """One masked batch: the lobe on each waveform's own samples and frames, then avg_pool of each row's own
        frames as classify() pools a batch of one -> [B, D]."""
        import torch

        from vpeval_torch.ssl_masked import speechbrain_wav2vec2

        outputs, frames = speechbrain_wav2vec2(self.wav2vec2, audios, device)
        ones = torch.ones(1, device=device)
        return torch.cat(
            [self.avg_pool(outputs[b : b + 1, :n].float(), ones).view(1, -1) for b, n in enumerate(frames.tolist())]
        )

    def classify_many(
        self, audios: list[np.ndarray], device: str, autocast, batch_size: int = 1, workers: int = 1, threads: int = 1
    ) -> list[str]:
        """classify() of each waveform, in input order: one at a time, or in masked batches of similar length
        where batch_size > 1 and the lobe is one masked batches follow. The groups (single waveforms or length
        buckets) run side by side on `workers` threads at `threads` torch threads (vpeval_torch.threads): they
        depend on the waveforms and batch_size only, so the classes are those of any core count."""
        import torch

        from vpeval_torch.batching import length_buckets
        from vpeval_torch.threads import grouped_map

        masked = batch_size > 1 and self.batches_masked()
        if masked:
            groups = length_buckets([len(a) for a in audios], batch_size, MASKED_BATCH_SECONDS * 16000)
        else:
            groups = [[i] for i in range(len(audios))]

        def run(group: list[int]) -> list[str]:
            if not masked:
                return [self.classify(audios[group[0]], device, autocast)]
            with torch.no_grad(), autocast():  # grad mode and autocast are per thread
                pooled = self.pooled_masked([audios[i] for i in group], device)
                probabilities = self.softmax(self.output_mlp(pooled))
            return [self.labels[int(i)] for i in torch.argmax(probabilities.float(), dim=-1).tolist()]

        return grouped_map(run, groups, len(audios), workers, threads)


MASKED_BATCH_SECONDS = 160  # padded audio of one masked batch (batch x longest), bounding its memory


@functools.lru_cache(maxsize=8)
def load_classifier(folder: str, wav2vec2_source: str | None, save_path: str) -> EmotionClassifier:
    """An emotion classifier folder built safely, on the CPU."""
    from vpeval_speech.speechbrain_asr import wav2vec2_factory

    require_speechbrain("uar (evaluator speechbrain)")
    root = Path(folder)
    path = root / HPARAMS
    values = read_hparams(path)
    special = {name: wav2vec2_factory(root, wav2vec2_source, Path(save_path), "wav2vec2_source") for name in WAV2VEC2}
    graph = Graph(values, path, special)
    parts = {key: graph.get(key) for key in ("wav2vec2", "avg_pool", "output_mlp", "softmax", "label_encoder")}
    loadables, paths = graph.pretrainer()
    for name, obj in loadables.items():
        load_loadable(obj, checkpoint_file(root, name, paths))
    encoder = parts["label_encoder"]
    labels = [encoder.ind2lab[i] for i in range(len(encoder))]
    from vpeval_torch.autocast_copies import weights_under_autocast
    from vpeval_torch.ssl_masked import time_major_under_autocast

    time_major_under_autocast(parts["wav2vec2"])  # cpu_precision bf16: wav2vec2's CNN as bf16 products
    for name in ("wav2vec2", "output_mlp"):  # bf16: weights cast once, not per utterance; rows in a few shapes
        weights_under_autocast(parts[name])
    return EmotionClassifier(root, parts["wav2vec2"], parts["avg_pool"], parts["output_mlp"], parts["softmax"], labels)


def read_spk2fold(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise MissingModelError(
            f"The uar parameter spk2fold points at {path}, which is not a file: give the data folder's spk2fold "
            "(lines `speaker-id fold`, as VPC 2024's IEMOCAP_dev and IEMOCAP_test hold)."
        )
    pairs = [line.split() for line in path.read_text().splitlines() if line.strip()]
    bad = [i + 1 for i, p in enumerate(pairs) if len(p) != 2]
    if bad:
        raise MissingModelError(f"{path}, line {bad[0]}: a spk2fold line is `speaker-id fold`.")
    return dict(pairs)  # type: ignore[arg-type]


def fold_folder(models: Path, fold: str) -> Path:
    """models/fold_<fold>'s latest CKPT<N> folder, the one evaluate_ser.py picks (scan_checkpoint(fold, 'CKPT')),
    else models/fold_<fold> itself, holding hyperparams.yaml."""
    base = models / f"fold_{fold}"
    checkpoint = latest_checkpoint(base, "CKPT")
    if checkpoint is not None and (checkpoint / HPARAMS).is_file():
        return checkpoint
    if (base / HPARAMS).is_file():
        return base
    raise MissingModelError(
        f"No emotion classifier for fold {fold}: {base} has no {HPARAMS} and no CKPT+<N> folder with one (VPC "
        "2024's exp/ser holds fold_1 ... fold_5)."
    )


def read_spk2folds(paths: list[Path]) -> dict[str, str]:
    """Several data folders' spk2fold files as one map (VPC 2024 scores IEMOCAP_dev and IEMOCAP_test, each
    with its own); a speaker given two folds is one sentence."""
    folds: dict[str, str] = {}
    for path in paths:
        for speaker, fold in read_spk2fold(path).items():
            if folds.setdefault(speaker, fold) != fold:
                raise MissingModelError(
                    f"{path} gives speaker {speaker} fold {fold}, and an earlier spk2fold fold {folds[speaker]}."
                )
    return folds


def models_by_speaker(
    models: Path, spk2fold: Path | list[Path] | None, speakers: list[str]
) -> tuple[dict[str, Path], list[str]]:
    """Each speaker's classifier folder and the speakers without a fold (left out, as VPC 2024 does)."""
    if (models / HPARAMS).is_file():
        return {s: models for s in speakers}, []
    if not spk2fold:
        raise MissingModelError(
            f"{models} holds no {HPARAMS}, so it is read as one classifier per fold (fold_<k>): set the uar "
            "parameter spk2fold to the data folder's spk2fold, which picks each speaker's fold."
        )
    folds = read_spk2folds(spk2fold if isinstance(spk2fold, list) else [spk2fold])
    chosen = {s: fold_folder(models, folds[s]) for s in speakers if s in folds}
    return chosen, sorted(s for s in speakers if s not in folds)


def macro_recall(truth: np.ndarray, predicted: np.ndarray) -> float:
    """sklearn's recall_score(average="macro"): over the labels in truth or predictions, a label never in
    the truth counting 0 (zero_division's default)."""
    labels = np.union1d(truth, predicted)
    return float(np.mean([np.mean(predicted[truth == lab] == lab) if (truth == lab).any() else 0.0 for lab in labels]))


def speaker_table(truth: np.ndarray, predicted: np.ndarray, speakers: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per speaker: UAR (%) and each present emotion's accuracy (%), rounded to 3 decimals as evaluate_ser.py
    rounds each row before its means."""
    table = {}
    for speaker in sorted(set(speakers.tolist())):
        rows = speakers == speaker
        t, p = truth[rows], predicted[rows]
        accuracy = {str(e): round(100.0 * float(np.mean(p[t == e] == e)), 3) for e in np.unique(t)}
        uar = round(100.0 * macro_recall(t, p), 3)
        table[speaker] = {"uar": uar, "accuracy": accuracy, "utterances": int(rows.sum())}
    return table


def classifier_labels(corpus_labels: list[str], label_map: dict[str, str], known: list[str], folder: Path) -> None:
    missing = sorted({label_map.get(label, label) for label in corpus_labels} - set(known))
    if missing:
        raise MetricInputError(
            f"The emotion labels {missing} of the corpus are not labels of the classifier at {folder} ({known}): "
            "map them with the uar parameter label_map (corpus label: classifier label)."
        )


def predictions(metric, utterances: list, folders: dict[str, Path], speech: str) -> np.ndarray:
    """The classifier label of each utterance (its speaker's fold model), cached by audio and model; the
    uncached ones of each model read a chunk at a time, classified one at a time on the CPU and in
    masked batches of similar length on a GPU (uar's batch_size), on the run's workers as threads on the CPU."""
    from vpeval.content_cache import JsonCache, cache_key
    from vpeval.data.fingerprint import file_hash

    params = metric.params
    cache = JsonCache(metric.context.folder("speechbrain-emotion"))
    keys, out = [], []
    for utterance in utterances:
        key = cache_key(
            file_hash(utterance.path),
            utterance.channel,
            model_identity(folders[utterance.speaker]),
            params.wav2vec2_source,
            "file-rate",
        )
        if params.level_normalization != "none":  # earlier keys kept for unnormalised input
            key = cache_key(key, params.level_normalization)
        keys.append(key)
        out.append(cache.get(key))
    todo: dict[Path, list[int]] = {}
    for i, label in enumerate(out):
        if label is None:
            todo.setdefault(folders[utterances[i].speaker], []).append(i)
    chunks = [(folder, ids[k : k + READ_CHUNK]) for folder, ids in todo.items() for k in range(0, len(ids), READ_CHUNK)]
    metric.context.apply_threads()
    for folder, chunk in metric.context.progress(chunks, total=len(chunks), description=f"uar: {speech}"):
        with _LOCK:
            classifier = load_classifier(
                str(folder), params.wav2vec2_source, str(metric.context.folder("hf-cache"))
            ).to(metric.context.device)
        # At the file's rate, as evaluate_ser.py's torchaudio.load hands it on (it never resamples).
        audios = [normalise_level(utterances[i].load(), params.level_normalization) for i in chunk]
        on_gpu = metric.context.on_gpu
        labels = classifier.classify_many(
            audios,
            metric.context.device,
            metric.context.autocast,
            params.batch_size if on_gpu else 1,
            1 if on_gpu else metric.context.workers,  # a GPU runs one batch at a time
            metric.context.threads,
        )
        for i, label in zip(chunk, labels, strict=True):
            cache.put(keys[i], label)
            out[i] = label
    return np.array(out)


READ_CHUNK = 64  # utterances whose audio is in memory at once; classify_many buckets them by length


def model_identity(folder: Path) -> str:
    """A classifier folder by its files' names, sizes and modification times (hashing gigabytes is too slow)."""
    files = sorted(p for p in folder.iterdir() if p.is_file())
    return ";".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files) + f"@{folder.resolve()}"


def sets_of(inputs, labelled: list) -> list:
    """The utterances classified: the labelled originals and their anonymized versions."""
    anonymized = inputs.anonymized
    return labelled + ([anonymized[u.id] for u in labelled if u.id in anonymized] if anonymized is not None else [])


def other_rates(metric, utterances: list) -> int:
    """How many files are not at 16 kHz (classified at their own rate, as the toolkit does), logged when any."""
    import logging

    import soundfile

    count = sum(1 for u in utterances if soundfile.info(str(u.path)).samplerate != 16000)
    if count:
        logging.getLogger(__name__).warning(
            "uar: %d file(s) are not at 16 kHz; each is classified at its own rate, as VPC 2024's evaluate_ser.py "
            "does (no resampling)",
            count,
        )
    return count


def speechbrain_uar(metric, inputs) -> list:
    """The uar metric's results with the speechbrain evaluator: original, then anonymized speech."""
    from vpeval.stats import percentile_interval, speaker_weights
    from vpeval.types import MetricResult

    params = metric.params
    if params.models is None:
        raise MetricInputError(
            "The uar evaluator speechbrain needs the parameter models: a SpeechBrain emotion classifier folder, "
            "or VPC 2024's exp/ser with one fold_<k> folder per IEMOCAP fold."
        )
    original = inputs.original
    labelled = [u for u in original if u.emotion]
    if not labelled:
        raise MetricInputError(f"No utterance of corpus {original.name} has an emotion label (utt2emo) for uar.")
    models = Path(params.models).expanduser()
    given = [params.spk2fold] if isinstance(params.spk2fold, str) else list(params.spk2fold or [])
    spk2fold = [Path(p).expanduser() for p in given] or None
    folders, no_fold = models_by_speaker(models, spk2fold, sorted({u.speaker for u in labelled}))
    labelled = [u for u in labelled if u.speaker in folders]
    if not labelled:
        named = ", ".join(str(p) for p in spk2fold or [])
        raise MetricInputError(f"No emotion-labelled speaker of corpus {original.name} is in {named}.")
    truth = np.array([params.label_map.get(u.emotion, u.emotion) for u in labelled])
    first = load_classifier(
        str(next(iter(folders.values()))), params.wav2vec2_source, str(metric.context.folder("hf-cache"))
    )
    classifier_labels([u.emotion for u in labelled], params.label_map, first.labels, first.folder)
    speakers = np.array([u.speaker for u in labelled])
    sets = [("original", labelled)]
    if inputs.anonymized is not None:
        kept = [i for i, u in enumerate(labelled) if u.id in inputs.anonymized]
        versions = [inputs.anonymized[labelled[i].id].replace(speaker=labelled[i].speaker) for i in kept]
        sets.append(("anonymized", versions))
    common = {
        "evaluator": f"SpeechBrain wav2vec2 emotion classifier{'s per fold' if spk2fold else ''} from {models}, "
        "each utterance classified as alone, as VPC 2024's evaluate_ser.py; "
        "UAR = mean over speakers of the macro recall"
        + (
            f"; input {params.level_normalization}-normalised per utterance"
            if params.level_normalization != "none"
            else ""
        ),
        "classes": first.labels,
        "fold_models": {s: str(f) for s, f in sorted(folders.items())},
        "skipped_no_fold": no_fold,
        "skipped_no_emotion": len(original) - sum(1 for u in original if u.emotion),
    }
    common["read_at_own_rate_not_16khz"] = other_rates(metric, sets_of(inputs, labelled))
    results = []
    for speech, utterances in sets:
        rows = np.array([i for i, u in enumerate(labelled) if speech == "original" or u.id in inputs.anonymized])
        predicted = predictions(metric, utterances, folders, speech)
        table = speaker_table(truth[rows], predicted, speakers[rows])
        names = list(table)
        uars = np.array([table[s]["uar"] for s in names])
        per_class = {
            label: float(np.mean([table[s]["accuracy"][label] for s in names if label in table[s]["accuracy"]]))
            for label in first.labels
            if any(label in table[s]["accuracy"] for s in names)
        }
        low = high = None
        details = {"speech": speech, **common, "utterances": len(rows), "per_speaker": table}
        details |= {"per_class_recall": per_class, "chance": 100.0 / len(first.labels)}
        details["table3"] = {"columns": ["UAR"] + [k.capitalize() for k in per_class], "row": [float(uars.mean())]}
        details["table3"]["row"] += list(per_class.values())
        if params.bootstrap:
            rng = metric.context.rng("uar-bootstrap", speech)
            values = [w @ uars / w.sum() for w in speaker_weights(np.array(names), params.bootstrap, rng)]
            low, high = percentile_interval(np.array(values), params.confidence)
            if low is not None:
                details["bootstrap"] = {
                    "replicates": params.bootstrap,
                    "confidence": params.confidence,
                    "unit": "speaker",
                }
        results.append(
            MetricResult(metric.result_name, float(uars.mean()), ci_low=low, ci_high=high, unit="%", details=details)
        )
    return results
