"""The embedding-tsne metric: seed 003's Figures 4 and 5 (section 4.3.2), "speaker [or emotion] embedding
visualization from original, OH, and P3 speech on IEMOCAP-test with 5 speakers and 4 emotions. Colors represent
emotions and shapes represent speakers", made with t-SNE (Van der Maaten and Hinton, 2008) from "the same
encoders ... used in P3": the speaker encoder (Figure 4: `embedding: encoder`, the SSL-SAS ECAPA) or emotion2vec
(Figure 5: `embedding: emotion2vec`).

It is a speech metric, so the core calls it once per anonymizer with the original and that anonymizer's speech:
each call draws the original panel and that system's panel (the original panel is the same in every call, its
t-SNE seeded from the run's seed and "original"). The paper states no t-SNE setting, so the defaults are
scikit-learn's. Each panel is projected on its own, as the paper's panels are separate maps. Besides the figure
(PNG + PDF) the call writes the points it draws as CSV and returns, per speech, the silhouette score of the
emotion labels in the 2-D map (the row's value) and in the embedding space, and of the speaker labels in both, so
that "four clear emotion clusters" is a number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params
from vpeval.content_cache import JsonCache, cache_key
from vpeval.data.fingerprint import file_hash
from vpeval.errors import MetricInputError
from vpeval.speakers import EncoderSpec
from vpeval.types import Corpus, MetricResult, Utterance
from vpeval_embedding_tsne.projection import Panel, draw, silhouette, tsne, write_csv

EMOTION2VEC_RATE = 16000


class EmbeddingTsne(Metric):
    """Silhouette of the emotion labels in a t-SNE map of utterance embeddings, with the map drawn (Figures 4, 5)."""

    name = "embedding-tsne"
    needs: ClassVar[str] = "speech"
    # Named by the embedding, so one run can hold Figure 4's (encoder) and Figure 5's (emotion2vec) rows side by side.
    result_metrics = ("embedding-tsne-emotion2vec", "embedding-tsne-encoder")
    device_sensitive = True  # torch encoders (emotion2vec+, a speaker encoder) give slightly different vectors

    class Params(Params):
        embedding: Literal["emotion2vec", "encoder"] = Field(
            "emotion2vec",
            description="emotion2vec: emotion2vec+'s utterance embedding from `emotion2vec_folder` (Figure 5); "
            "encoder: the speaker encoder `encoder` (Figure 4: the SSL-SAS ECAPA, `ssl-sas-ecapa`).",
        )
        emotion2vec_folder: str | None = Field(
            None, description="embedding emotion2vec: a local emotion2vec+ folder (model.pt, config.yaml, tokens.txt)."
        )
        encoder: EncoderSpec | None = Field(None, description="embedding encoder: the speaker encoder {use, params}.")
        emotions: list[str] = Field(
            default_factory=lambda: ["ang", "hap", "neu", "sad"],
            description="The emotion labels (utt2emo, after label_map) whose utterances are drawn, in legend order; "
            "the paper's four IEMOCAP classes by default. Utterances with another label or none are left out and "
            "counted (details.skipped_no_emotion, skipped_other_emotion).",
        )
        label_map: dict[str, str] = Field(default_factory=dict, description="Corpus emotion label -> drawn label.")
        perplexity: float = Field(
            30.0, gt=0, le=1000, description="t-SNE perplexity; the paper states none, so scikit-learn's default 30."
        )
        early_exaggeration: float = Field(
            12.0, gt=0, le=1000, description="t-SNE early exaggeration (scikit-learn's 12)."
        )
        learning_rate: Annotated[float, Field(gt=0, le=100_000)] | Literal["auto"] = Field(
            "auto", description="t-SNE learning rate (scikit-learn's auto)."
        )
        max_iter: int = Field(1000, ge=250, le=100_000, description="t-SNE iterations (scikit-learn's 1000).")
        init: Literal["pca", "random"] = Field(
            "pca",
            description="t-SNE initialisation (scikit-learn's pca, which fixes the map whatever the seed; "
            "random: the run's seed chooses it).",
        )
        distance: Literal["euclidean", "cosine"] = Field(
            "euclidean",
            description="Distance between embeddings, for t-SNE and the embedding-space silhouette "
            "(scikit-learn's euclidean).",
        )

    @property
    def result_name(self) -> str:
        return f"{self.name}-{self.params.embedding}"

    @classmethod
    def missing_paths(cls, params: Params) -> list[str]:
        if params.embedding == "emotion2vec":
            from vpeval_emotion2vec.folder import folder_problems

            return folder_problems(params.emotion2vec_folder, "embedding-tsne's emotion2vec_folder")
        if params.encoder is None:
            return ["embedding-tsne with embedding: encoder needs `encoder` (a speaker encoder {use, params})."]
        return []

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        original = inputs.original
        if original is None:
            raise MetricInputError(f"Metric {self.name} needs evaluation speech: run it as a speech metric.")
        p = self.params
        problems = self.missing_paths(p)
        if problems:
            raise MetricInputError(problems[0])
        truth = {u.id: p.label_map.get(u.emotion, u.emotion) for u in original if u.emotion}
        kept = [u for u in original if truth.get(u.id) in p.emotions]
        if len({truth[u.id] for u in kept}) < 2:
            raise MetricInputError(
                f"Metric {self.name} needs utterances of at least two of the emotions {p.emotions} in corpus "
                f"{original.name} (utt2emo, after label_map): add emotion labels or set `emotions`."
            )
        if p.perplexity >= len(kept):
            raise MetricInputError(
                f"Metric {self.name}: perplexity {p.perplexity:g} must be below the number of drawn utterances "
                f"({len(kept)}): lower `perplexity` or draw more speech."
            )
        system = str(inputs.attributes.get("anonymizer") or "original")
        speeches = [("original", original)] + ([(system, inputs.anonymized)] if inputs.anonymized else [])
        panels = [self.panel(speech, corpus, kept, truth) for speech, corpus in speeches]
        folder = self.context.folder("figures")
        stem = f"{self.result_name}-{system}"
        csv_path = write_csv(folder / f"{stem}.csv", panels)
        what = "emotion2vec+" if p.embedding == "emotion2vec" else f"speaker encoder {p.encoder.use}"
        png, pdf = draw(folder, stem, f"t-SNE of {what} embeddings", panels, p.emotions)
        common = {
            "embedding": what,
            "tsne": {**self.settings(), "projection": "each panel on its own"},
            "skipped_no_emotion": len(original) - len(truth),
            "skipped_other_emotion": len(truth) - len(kept),
            "csv": str(csv_path),
            "figure_png": str(png),
            "figure_pdf": str(pdf),
        }
        return [self.result(panel, common) for panel in panels]

    def settings(self) -> dict:
        p = self.params
        return {
            "perplexity": p.perplexity,
            "early_exaggeration": p.early_exaggeration,
            "learning_rate": p.learning_rate,
            "max_iter": p.max_iter,
            "init": p.init,
            "metric": p.distance,
        }

    def random_state(self, speech: str) -> int:
        """The t-SNE seed of one panel: the run's seed and the speech, so a panel is the same in every call."""
        return int(self.context.rng(self.name, speech).integers(2**31 - 1))

    def panel(self, speech: str, corpus: Corpus, kept: list[Utterance], truth: dict[str, str]) -> Panel:
        utterances = [corpus[u.id] for u in kept if u.id in corpus]
        if len(utterances) <= self.params.perplexity:
            raise MetricInputError(
                f"Metric {self.name}: the {speech} speech has {len(utterances)} of the {len(kept)} drawn utterances, "
                f"not more than perplexity {self.params.perplexity:g}: anonymize every evaluation utterance."
            )
        vectors = self.embeddings(utterances, speech)
        points = tsne(vectors, self.settings(), self.random_state(speech))
        return Panel(speech, [u.id for u in utterances], [u.speaker for u in utterances],
                     [truth[u.id] for u in utterances], vectors, points)  # fmt: skip

    def result(self, panel: Panel, common: dict) -> MetricResult:
        distance = self.params.distance
        details = {
            **common,
            "speech": "original" if panel.speech == "original" else "anonymized",
            "points": len(panel.ids),
            "speakers": len(set(panel.speakers)),
            "tsne_random_state": self.random_state(panel.speech),
            "silhouette_emotion_2d": silhouette(panel.points, panel.emotions),
            "silhouette_speaker_2d": silhouette(panel.points, panel.speakers),
            "silhouette_emotion_embedding": silhouette(panel.vectors, panel.emotions, distance),
            "silhouette_speaker_embedding": silhouette(panel.vectors, panel.speakers, distance),
        }
        value = details["silhouette_emotion_2d"]
        return MetricResult(metric=self.result_name, value=float("nan") if value is None else value, details=details)

    def embeddings(self, utterances: list[Utterance], speech: str) -> np.ndarray:
        """[N, D] utterance embeddings, cached by audio content and the model."""
        p = self.params
        if p.embedding == "emotion2vec":
            folder = str(Path(p.emotion2vec_folder).expanduser().resolve())
            model_id, rate = file_hash(str(Path(folder) / "model.pt")), EMOTION2VEC_RATE
        else:
            model_id = json.dumps(p.encoder.model_dump(), sort_keys=True, default=str)
        cache = JsonCache(self.context.folder(f"embeddings-{p.embedding}"))
        model = None
        out = []
        for u in self.context.progress(utterances, total=len(utterances), description=f"{self.name}: {speech}"):
            key = cache_key(file_hash(u.path), u.channel, model_id)
            entry = cache.get(key)
            if entry is None:
                if p.embedding == "emotion2vec":
                    from vpeval_emotion2vec import folder as e2v

                    model = model or e2v.load(folder, self.context.device)
                    vector = e2v.embedding(model, u.load(rate))
                else:
                    model = model or self.context.get("encoder", p.encoder.use, dict(p.encoder.params))
                    vector = model.embed(np.asarray(u.load(model.sample_rate), dtype=np.float32))
                entry = [float(v) for v in np.asarray(vector).reshape(-1)]
                cache.put(key, entry)
            out.append(entry)
        return np.asarray(out, dtype=np.float64)
