"""The `embedding-privacy` metric: seed 003's Table 6 (evaluation in speaker-embedding space) from an experiment.

The evaluation speech is embedded by a speaker encoder; each listed embedding anonymizer (OHNN, OHNN +
emotion compensation, ...) anonymizes those vectors; for the original row and each system the metric
reports the cosine ASV EER on the vectors (O-O for the original row, O-A and A-A for systems) and the
UAR of a D -> 128 -> emotions classifier trained on that system's vectors (evaluation.py).

It reads only the original evaluation speech, so it belongs in an experiment with `anonymizers: []`
(the runner then calls it once). In an experiment with anonymizers it computes on the first call
only and returns no rows for the others, instead of repeating the same table per anonymizer.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params, PluginRef, Voice
from vpeval.errors import MetricInputError
from vpeval.types import Corpus, MetricResult
from vpeval_embedding_anonymizers.evaluation import Row, mean_uar, pairwise_eer

SYSTEM_LABELS = {"ohnn": "+ OHNN", "emotion-compensation": "+ OHNN + EC", "selection": "+ selection"}


class SystemSpec(Params):
    """One embedding anonymizer of the table."""

    use: Annotated[str, PluginRef("anonymizer", params="params", works_on="embedding")] = Field(
        description="Embedding anonymizer plugin name (ohnn, emotion-compensation, selection, ...)."
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Its parameters; `encoder` defaults to the metric's encoder."
    )
    label: str | None = Field(None, description="Row name in the table (default: '+ OHNN', '+ OHNN + EC', ...).")


def _default_systems() -> list[SystemSpec]:
    return [SystemSpec(use="ohnn"), SystemSpec(use="emotion-compensation")]


class EmbeddingPrivacy(Metric):
    """ASV EER (O-A, A-A) and emotion UAR on anonymized speaker embeddings, as seed 003's Table 6."""

    name = "embedding-privacy"
    needs = "speech"
    result_metrics = ("embedding-eer", "embedding-uar", "emotion-indicator-uar")

    class Params(Params):
        encoder: Annotated[str, PluginRef("encoder", params="encoder_params")] = Field(
            "ge2e", description="Speaker encoder plugin that embeds the evaluation speech."
        )
        encoder_params: dict[str, Any] = Field(default_factory=dict, description="Its parameters.")
        systems: list[SystemSpec] = Field(
            default_factory=_default_systems,
            description="Embedding anonymizers, one table row each (paper: OHNN, then OHNN + emotion compensation).",
        )
        level: Literal["speaker", "utterance"] = Field(
            "utterance", description="Pseudo-speaker per utterance or per speaker (the Voice key and its rng)."
        )
        repeats: int = Field(
            5, ge=1, le=1000, description="Random 85 / 15 splits the emotion UAR is averaged over (as table6.py)."
        )
        split: Literal["utterance", "speaker"] = Field(
            "utterance",
            description="Emotion classifier split: random utterances (the paper; test speakers are "
            "seen in training) or held-out speakers (as VoicePrivacy's speaker-independent emotion evaluator).",
        )

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.reported: set[str] = set()  # corpora whose table this instance already returned

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        corpus = inputs.original
        if corpus is None or len(corpus) == 0:
            raise MetricInputError(
                "The embedding-privacy metric needs evaluation speech (MetricInputs.original is empty): "
                "run it as a speech metric on a corpus with utterances."
            )
        key = self.corpus_key(corpus)
        if inputs.anonymized is not None and key in self.reported:
            return []  # the same table was reported on the first anonymizer's call
        self.reported.add(key)
        return self.table(corpus)

    def table(self, corpus: Corpus) -> list[MetricResult]:
        utts = list(corpus.utterances)
        speakers = np.array([u.speaker for u in utts])
        if len(set(speakers.tolist())) < 2:
            raise MetricInputError(
                f"The embedding-privacy metric needs at least two speakers in corpus {corpus.name} for an EER."
            )
        labelled = np.array([bool(u.emotion) for u in utts])
        emotions = np.array([u.emotion or "" for u in utts])
        if len(set(emotions[labelled].tolist())) < 2:
            raise MetricInputError(
                f"The embedding-privacy metric needs emotion labels of at least two emotions in corpus "
                f"{corpus.name}: add emotion labels or drop the metric."
            )
        original = self.embeddings(corpus)
        systems, indicators = {}, {}
        for spec in self.params.systems:
            label = spec.label or SYSTEM_LABELS.get(spec.use, f"+ {spec.use}")
            systems[label], indicators[label] = self.anonymize(spec, original, utts)

        seed = self.context.seed
        repeats = self.params.repeats

        groups = speakers[labelled] if self.params.split == "speaker" else None

        def uar(vectors):
            return mean_uar(vectors[labelled], emotions[labelled], seed, repeats, groups)

        oo = pairwise_eer(original, original, speakers)
        rows = [Row("original", oo, oo, *uar(original))]
        for label, vectors in systems.items():
            rows.append(
                Row(
                    label,
                    pairwise_eer(original, vectors, speakers),
                    pairwise_eer(vectors, vectors, speakers),
                    *uar(vectors),
                )
            )
        note, indicator_results = indicator_notes(indicators, emotions, labelled)
        results = self.results(rows, markdown_table(rows, corpus, self.params) + note)
        for r in results:
            if r.metric == "embedding-uar":
                r.details["split"] = self.params.split  # two entries may differ only in it
        return results + indicator_results

    @staticmethod
    def results(rows: list[Row], table: str) -> list[MetricResult]:
        out = []
        for row in rows:
            if row.system == "original":
                eers = [("O-O", row.eer_oa)]
            else:
                eers = [("O-A", row.eer_oa), ("A-A", row.eer_aa)]
            for protocol, value in eers:
                out.append(
                    MetricResult(
                        "embedding-eer", 100.0 * value, unit="%", details={"protocol": protocol, "system": row.system}
                    )
                )
            out.append(
                MetricResult(
                    "embedding-uar",
                    100.0 * row.uar_final,
                    unit="%",
                    details={"system": row.system, "uar_first_epoch": 100.0 * row.uar_first},
                )
            )
        out[0].details["table"] = table
        for r in out:
            r.details["evaluator"] = (
                "cosine scoring on speaker vectors"
                if r.metric == "embedding-eer"
                else "D-128-E classifier on speaker vectors"
            )
        return out

    def corpus_key(self, corpus: Corpus) -> str:
        spec = json.dumps([self.params.encoder, self.params.encoder_params], sort_keys=True, default=str)
        digest = hashlib.sha1(spec.encode())
        for u in corpus.utterances:
            digest.update(str(u.path).encode() + b"\0")
        return digest.hexdigest()[:16]

    def embeddings(self, corpus: Corpus) -> np.ndarray:
        """Encoder embeddings [U, D] of the corpus, cached by encoder and utterance paths."""
        cache = self.context.folder("embeddings") / f"{self.params.encoder}-{self.corpus_key(corpus)}.npy"
        if cache.is_file():
            return np.load(cache)
        encoder = self.context.get("encoder", self.params.encoder, dict(self.params.encoder_params))
        vectors = np.asarray(encoder.embed_corpus(corpus), dtype=np.float64)
        np.save(cache, vectors)
        return vectors

    def anonymize(self, spec: SystemSpec, original: np.ndarray, utts) -> np.ndarray:
        params = dict(spec.params)
        # Pool and evaluation vectors must come from the same encoder.
        params.setdefault("encoder", {"use": self.params.encoder, "params": dict(self.params.encoder_params)})
        anonymizer = self.context.get("anonymizer", spec.use, params)
        if not hasattr(anonymizer, "anonymize_embeddings"):
            raise MetricInputError(
                f"embedding-privacy systems entry {spec.use!r} is not an embedding anonymizer; "
                "name one that anonymizes speaker vectors (ohnn, emotion-compensation, selection)."
            )
        anonymizer.prepare()
        by_speaker = self.params.level == "speaker"
        voices = []
        for u in utts:
            key = u.speaker if by_speaker else u.id
            voices.append(Voice(key, self.params.level, self.context.rng("voice", key), utterance=u))
        vectors = np.asarray(anonymizer.anonymize_embeddings(original, voices), dtype=np.float64)
        # The emotion the system's indicator read from each source utterance (emotion compensation).
        predicted = anonymizer.source_emotions(original, voices) if hasattr(anonymizer, "source_emotions") else None
        return vectors, (anonymizer.indicator, predicted) if predicted is not None else None


def indicator_notes(indicators: dict, emotions: np.ndarray, labelled: np.ndarray) -> tuple[str, list[MetricResult]]:
    """A line under the table and an `emotion-indicator-uar` result per system with an indicator."""
    from sklearn.metrics import balanced_accuracy_score

    lines, results = [], []
    for label, found in indicators.items():
        if found is None:
            continue
        kind, predicted = found
        predicted = np.asarray(predicted)[labelled]
        uar = 100.0 * balanced_accuracy_score(emotions[labelled], predicted)
        accuracy = 100.0 * float(np.mean(predicted == emotions[labelled]))
        lines.append(
            f"Emotion indicator of {label} ({kind}) on this speech: UAR {uar:.2f} %, accuracy {accuracy:.2f} %."
        )
        results.append(
            MetricResult(
                "emotion-indicator-uar",
                uar,
                unit="%",
                details={
                    "system": label,
                    "indicator": kind,
                    "accuracy": accuracy,
                    "evaluator": f"{kind} emotion indicator",
                },
            )
        )
    return ("\n\n" + "\n".join(lines) if lines else ""), results


def markdown_table(rows: list[Row], corpus: Corpus, params) -> str:
    """Table 6 layout: EER O-A / A-A and UAR after the first and the final epoch, in percent."""
    lines = [
        f"Embedding-space evaluation on {corpus.name} ({len(corpus)} utterances, encoder {params.encoder}, "
        f"{params.level} level; the original row's EER is O-O; UAR on {params.split}-disjoint 85 / 15 splits, "
        f"mean of {params.repeats})",
        "",
        "| speaker embeddings | EER O-A (%) | EER A-A (%) | UAR first epoch (%) | UAR final (%) |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.system} | {100 * r.eer_oa:.2f} | {100 * r.eer_aa:.2f} | "
            f"{100 * r.uar_first:.2f} | {100 * r.uar_final:.2f} |"
        )
    return "\n".join(lines)
