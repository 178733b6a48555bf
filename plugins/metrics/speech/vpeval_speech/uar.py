"""Unweighted average recall (UAR) of an emotion evaluator on original and anonymized speech."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field

import vpeval_prosody as prosody
from vpeval.api import Metric, MetricInputs, Params
from vpeval.content_cache import JsonCache, cache_key
from vpeval.data.fingerprint import file_hash
from vpeval.errors import MetricInputError
from vpeval.stats import percentile_interval, speaker_weights
from vpeval.types import Corpus, MetricResult, Utterance
from vpeval_speech import acoustic_features
from vpeval_speech.emotion_evaluator import (
    FoldOutcome,
    class_recalls,
    make_classifier,
    normalise_per_speaker,
    speaker_folds,
    weighted_fold_uar,
)
from vpeval_speech.level import normalise_level

# Seed 003's Table 3 column order; other labels follow alphabetically.
TABLE3_ORDER = ("sad", "neutral", "angry", "happy")
FEATURE_RATE = 16000


def table_order(labels: list[str]) -> list[str]:
    known = [label for label in TABLE3_ORDER if label in labels]
    return known + sorted(label for label in labels if label not in TABLE3_ORDER)


class UAR(Metric):
    """Emotion UAR (%): macro recall of a speaker-independent acoustic emotion classifier, per fold, averaged."""

    name = "uar"
    needs = "speech"
    # With level_normalization its results are named uar-rms / uar-peak, so a run can report both side by
    # side (tables, findings) and the UAR lost to level alone reads as uar-rms minus uar.
    result_metrics = ("uar", "uar-rms", "uar-peak")
    device_sensitive = True  # the speechbrain evaluator's torch numbers (the acoustic one is numpy only)

    class Params(Params):
        enabled: bool = Field(
            True,
            description="false: the metric computes nothing and checks no path (a warning says so); for an "
            "experiment variable that says whether the corpus has emotion data (the VPC recipes' UTILITY).",
        )
        evaluator: Literal["acoustic", "speechbrain", "emotion2vec"] = Field(
            "acoustic",
            description="acoustic: vpeval's classifier trained on the original speech in speaker folds (below); "
            "speechbrain: SpeechBrain wav2vec2 classifier folders (models), per IEMOCAP fold by spk2fold, "
            "scored as VPC 2024 scores them; emotion2vec: emotion2vec+ from the local folder `models` (FunASR), "
            "its 9 classes mapped to ang/hap/neu/sad and scored as VPC 2026 Track 2 scores them (the acoustic "
            "parameters are then unused).",
        )
        models: str | None = Field(
            None,
            description="speechbrain: a local emotion classifier folder (speechbrain/emotion-recognition-wav2vec2-"
            "IEMOCAP's layout), or VPC 2024's exp/ser with fold_<k> folders chosen per speaker by spk2fold; "
            "emotion2vec: a local emotion2vec+ folder (config.yaml, model.pt, tokens.txt).",
        )
        emotion2vec_map: Literal["vpc2026", "seed003"] = Field(
            "vpc2026",
            description="emotion2vec: how the most probable of its 9 classes becomes ang/hap/neu/sad: vpc2026 (the "
            "VPC 2026 toolkit's: disgusted -> ang, fearful -> sad, surprised -> neu) or seed003 (the paper's: "
            "disgusted and fearful -> sad, surprised -> hap); other and unknown -> neu in both.",
        )
        sets: list[str] = Field(
            default_factory=list,
            description="emotion2vec: Kaldi data folders (the toolkit's data/emodata_track2_dev, _test), one row per "
            "folder over the utterances its wav.scp lists (details.dataset), after the pooled row.",
        )
        spk2fold: str | list[str] | None = Field(
            None,
            description="speechbrain: the data folder's spk2fold file (speaker-id fold) picking each model, or a "
            "list of them (VPC: IEMOCAP_dev's and IEMOCAP_test's); each adds a row for its folder (details.dataset) "
            "with VPC 2024's per-fold rows (details.fold_rows), after the pooled rows.",
        )
        wav2vec2_source: str | None = Field(
            None, description="speechbrain: a local transformers folder for the wav2vec2 the YAML names by hub id."
        )
        batch_size: int = Field(
            8,
            ge=1,
            le=256,
            description="speechbrain: utterances per masked batch on a GPU (similar lengths together), each "
            "classified as alone (the wav2vec2 normalised over its own samples and masked to its own frames); 1: one "
            "at a time. The CPU classifies one at a time on the run's workers as threads (masked batches of 8 cost "
            "as much CPU there at wav2vec2-base size, 0.98-1.01x: they pay for their padding).",
        )
        label_map: dict[str, str] = Field(
            default_factory=dict, description="speechbrain: corpus emotion label -> classifier label (neutral: neu)."
        )
        folds: int = Field(
            5, ge=2, le=100, description="Speaker-independent folds (fewer when there are fewer speakers)."
        )
        features: Literal["prosody", "functionals", "both"] = Field(
            "prosody",
            description="prosody: 13 two-pass Praat prosodic features (pitch level, spread and movement, tempo, "
            "loudness spread, spectral balance, harmonicity); functionals: 70 eGeMAPS-like functionals with "
            "MFCCs (the first evaluator; MFCCs also carry the speaker); both: the two side by side.",
        )
        classifier: Literal["logistic-regression", "linear-svm"] = Field(
            "logistic-regression", description="Linear classifier on the standardised features."
        )
        regularization: float = Field(
            1.0, gt=0, le=1e6, description="Inverse regularisation strength C of the classifier."
        )
        speaker_normalization: bool = Field(
            False, description="Z-score features within each speaker before classifying (off: absolute features)."
        )
        bootstrap: int = Field(
            1000,
            ge=0,
            le=100_000,
            description="Speaker-level bootstrap replicates for the confidence interval (the folds' "
            "predictions are reweighted, the models not retrained); 0 disables it.",
        )
        confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Coverage of the percentile confidence interval.")
        level_normalization: Literal["none", "rms", "peak"] = Field(
            "none",
            description="Gain applied to every utterance (original and anonymized) before the evaluator reads it: "
            "none; rms: to -20 dBFS RMS; peak: largest sample to 0.99. Running with and without it tells how "
            "much of an anonymizer's UAR loss is only a change of level.",
        )

    @property
    def result_name(self) -> str:
        mode = self.params.level_normalization
        return self.name if mode == "none" else f"{self.name}-{mode}"

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        if params.evaluator == "emotion2vec" and params.enabled:
            from vpeval_emotion2vec.folder import folder_problems

            missing = [f"the uar set {f} has no wav.scp." for f in params.sets if not (Path(f) / "wav.scp").is_file()]
            return folder_problems(params.models, "the emotion2vec evaluator's models") + missing
        if params.evaluator != "speechbrain" or not params.enabled:
            return []
        out = []
        if params.models is None:
            out.append("the speechbrain evaluator needs models: an emotion classifier folder or VPC 2024's exp/ser.")
        elif not Path(params.models).expanduser().is_dir():
            out.append(
                f"models {params.models} is not a folder (VPC 2024: exp/ser with fold_1 ... fold_5, from the "
                "toolkit's 01_download_data_model.sh, ser.zip)."
            )
        for spk2fold in [params.spk2fold] if isinstance(params.spk2fold, str) else params.spk2fold or []:
            if not Path(spk2fold).expanduser().is_file():
                out.append(
                    f"spk2fold {spk2fold} is not a file (the data folder's spk2fold; VPC's IEMOCAP_dev / IEMOCAP_test "
                    "come with the toolkit's data.zip, the IEMOCAP audio by its own licence)."
                )
        if params.wav2vec2_source and not (Path(params.wav2vec2_source).expanduser() / "config.json").is_file():
            out.append(
                f"wav2vec2_source {params.wav2vec2_source} is not a transformers folder (no config.json; a local "
                "copy of the hub model the classifier's YAML names)."
            )
        return out

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        if not self.params.enabled:
            self.context.log.warning("uar: enabled is false, so no UAR is computed (no emotion data in this run).")
            return []
        original = inputs.original
        if original is None:
            raise MetricInputError(
                "The uar metric needs evaluation speech (MetricInputs.original is empty): run it as a speech metric."
            )
        if self.params.evaluator == "speechbrain":
            from vpeval_speech.ser_folds import split_rows
            from vpeval_speech.speechbrain_emotion import speechbrain_uar

            # The pooled rows, then VPC 2024's per IEMOCAP split (spk2fold's folder), with its per-fold rows.
            return speechbrain_uar(self, inputs) + split_rows(self, inputs)
        if self.params.evaluator == "emotion2vec":
            from vpeval_speech.emotion2vec_uar import emotion2vec_uar

            return emotion2vec_uar(self, inputs)
        labelled = [u for u in original if u.emotion]
        labels = np.array([u.emotion for u in labelled])
        classes = table_order(sorted(set(labels.tolist())))
        if len(classes) < 2:
            raise MetricInputError(
                f"The uar metric needs emotion labels of at least two emotions in corpus {original.name} "
                f"(found {len(classes)}): add utt2emo labels or drop the uar metric."
            )
        speakers = np.array([u.speaker for u in labelled])
        if len(set(speakers.tolist())) < 2:
            raise MetricInputError(
                f"The uar metric needs emotion-labelled speech of at least two speakers in corpus {original.name} "
                "for speaker-independent folds: add speakers or drop the uar metric."
            )
        features = self.features(labelled, "original")
        anonymized_rows, anonymized_features = self.anonymized_features(inputs.anonymized, labelled)
        outcomes = self.cross_validate(labels, speakers, features, anonymized_rows, anonymized_features)

        common = {
            "evaluator": self.evaluator_description(original, features.shape[1], len(outcomes)),
            "classes": classes,
            "folds": len(outcomes),
            "fold_speakers": [outcome.speakers for outcome in outcomes],
            "skipped_no_emotion": len(original) - len(labelled),
            "chance": 100.0 / len(classes),
        }
        results = [self.result([o.original for o in outcomes], classes, "original", len(labelled), common)]
        self.add_interval(results[0], [(o.original_rows, o.original_predicted) for o in outcomes], labels, speakers)
        if inputs.anonymized is not None:
            held = [o for o in outcomes if o.anonymized is not None]
            if held:
                results.append(
                    self.result([o.anonymized for o in held], classes, "anonymized", len(anonymized_rows), common)
                )
                self.add_interval(
                    results[-1], [(o.anonymized_rows, o.anonymized_predicted) for o in held], labels, speakers
                )
        return results

    def add_interval(self, result: MetricResult, folds, labels: np.ndarray, speakers: np.ndarray) -> None:
        """Speaker-bootstrap interval of the fold-averaged UAR: resample speakers, reweight predictions."""
        if not self.params.bootstrap:
            return
        rng = self.context.rng("uar-bootstrap", result.details["speech"])
        values = [
            100.0 * weighted_fold_uar(folds, labels, w) for w in speaker_weights(speakers, self.params.bootstrap, rng)
        ]
        result.ci_low, result.ci_high = percentile_interval(np.array(values), self.params.confidence)
        if result.ci_low is not None:
            result.details["bootstrap"] = {
                "replicates": self.params.bootstrap,
                "confidence": self.params.confidence,
                "unit": "speaker",
            }

    def cross_validate(self, labels, speakers, features, anonymized_rows, anonymized_features) -> list[FoldOutcome]:
        outcomes = []
        for fold, (train, test) in enumerate(speaker_folds(speakers, self.params.folds)):
            if len(np.unique(labels[train])) < 2:
                raise MetricInputError(
                    f"Fold {fold + 1} of the uar metric has one emotion only in its training speakers: give each "
                    "emotion to several speakers, or lower the uar parameter folds."
                )
            model = make_classifier(
                self.params.classifier, self.params.regularization, self.context.torch_seed("uar", fold)
            )
            model.fit(features[train], labels[train])
            predicted = model.predict(features[test])
            original = class_recalls(labels[test], predicted)
            held_out = np.isin(anonymized_rows, test)
            anonymized = rows = anonymized_predicted = None
            if held_out.any():
                rows = anonymized_rows[held_out]
                anonymized_predicted = model.predict(anonymized_features[held_out])
                anonymized = class_recalls(labels[rows], anonymized_predicted)
            outcomes.append(
                FoldOutcome(
                    sorted(set(speakers[test].tolist())),
                    original,
                    anonymized,
                    test,
                    predicted,
                    rows,
                    anonymized_predicted,
                )
            )
        return outcomes

    def result(self, recalls: list[dict[str, float]], classes, speech: str, count: int, common) -> MetricResult:
        """UAR averaged over folds; per-class recall averaged over the folds that hold the class."""
        fold_uar = [100.0 * float(np.mean(list(r.values()))) for r in recalls]
        per_class = {
            label: 100.0 * float(np.mean([r[label] for r in recalls if label in r]))
            for label in classes
            if any(label in r for r in recalls)
        }
        value = float(np.mean(fold_uar))
        return MetricResult(
            metric=self.result_name,
            value=value,
            unit="%",
            details={
                "speech": speech,
                **common,
                "utterances": count,
                "fold_uar": fold_uar,
                "fold_std": float(np.std(fold_uar)),
                "per_class_recall": per_class,
                # Seed 003, Table 3: UAR then class-wise recalls (Sad, Neutral, Angry, Happy), in %.
                "table3": {
                    "columns": ["UAR"] + [label.capitalize() for label in per_class],
                    "row": [value] + list(per_class.values()),
                },
            },
        )

    def evaluator_description(self, corpus: Corpus, dimensions: int, folds: int) -> str:
        scaling = "per-speaker z-scored" if self.params.speaker_normalization else "standardised"
        if self.params.level_normalization != "none":
            scaling += f" (input {self.params.level_normalization}-normalised per utterance)"
        kind = {
            "prosody": "two-pass Praat prosodic features",
            "functionals": "Praat functionals (F0, intensity, HNR, MFCC)",
            "both": "prosodic features and Praat functionals",
        }[self.params.features]
        return (
            f"vpeval-speech-metrics acoustic emotion evaluator: {self.params.classifier} "
            f"(C={self.params.regularization}, balanced class weights) on {dimensions} {scaling} {kind}, "
            f"trained on the original speech of {corpus.name} in "
            f"{folds} speaker-independent folds; no packaged emotion model exists (VoicePrivacy 2024 uses a "
            "wav2vec2 SER fine-tuned on IEMOCAP), so numbers compare systems within one corpus only."
        )

    def anonymized_features(
        self, anonymized: Corpus | None, labelled: list[Utterance]
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows of `labelled` that have an anonymized version, and that version's features."""
        if anonymized is None:
            return np.zeros(0, dtype=int), np.zeros((0, 0))
        rows = np.array([i for i, u in enumerate(labelled) if u.id in anonymized], dtype=int)
        versions = [anonymized[labelled[i].id].replace(speaker=labelled[i].speaker) for i in rows]
        return rows, self.features(versions, "anonymized") if len(rows) else np.zeros((0, 0))

    def features(self, utterances: list[Utterance], speech: str) -> np.ndarray:
        """Features [U, D] of the chosen kind, cached by audio content."""
        cache = JsonCache(self.context.folder("features"))
        kinds = ["prosody", "functionals"] if self.params.features == "both" else [self.params.features]
        # Keys without a normalisation stay those of the earlier caches.
        levels = [] if self.params.level_normalization == "none" else [self.params.level_normalization]

        def row_of(utterance: Utterance) -> list[float]:
            row: list[float] = []
            for kind in kinds:
                version = prosody.FEATURE_VERSION if kind == "prosody" else acoustic_features.FEATURE_VERSION
                key = cache_key(file_hash(utterance.path), utterance.channel, version, FEATURE_RATE, *levels)
                values = cache.get(key)
                if values is None:
                    audio = normalise_level(utterance.load(FEATURE_RATE), self.params.level_normalization)
                    values = (
                        prosody.prosodic_features(audio, FEATURE_RATE).tolist()
                        if kind == "prosody"
                        else list(acoustic_features.functionals(audio, FEATURE_RATE).values())
                    )
                    cache.put(key, values)
                row += values
            return row

        # Praat runs one utterance per worker process (the run's workers); rows come back in order.
        rows = self.context.map(row_of, utterances, f"uar: {speech}")
        matrix = np.asarray(rows, dtype=np.float64)
        if self.params.speaker_normalization:
            matrix = normalise_per_speaker(matrix, np.array([u.speaker for u in utterances]))
        return matrix
