"""Emotion compensation (seed 003, section 3): z_edit = z + alpha_e n_e after an embedding anonymizer.

One linear SVM per emotion (one-vs-rest) is trained on original speaker embeddings of emotion-
labelled speech; n_e is the unit normal of emotion e's hyperplane. An emotion indicator predicts e
from the original vector x, the base anonymizer (OHNN by default) gives z, and z moves along n_e by
alpha_e (paper: 35 for happy and angry, -35 for sad, 0 for neutral). As in the paper's Eq. (1), z is
not normalised. The paper's alpha is in its ECAPA's units, so by default (`alpha_units: relative`) alpha
is scaled by (median norm of this encoder's vectors / REFERENCE_NORM): with a unit-length encoder such
as GE2E, an absolute 35 would be 35 times the whole vector and erase the speaker. `absolute` keeps the
paper's number as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import PluginRef, Voice, stable_int
from vpeval.errors import DataError
from vpeval.speakers import POOL_SEED, CorpusSpec, PoolEmbeddings, load_pool
from vpeval_embedding_anonymizers.base import EmbeddingAnonymizer, PoolParams

# Emotion data defaults to the synth corpus's acted-emotion preset, with a seed of its own (disjoint
# from the evaluation corpus and the pool), as seed 003 trains its SVMs on a separate emotion corpus.
DEFAULT_EMOTION_CORPUS = {"preset": "emotion", "seed": POOL_SEED + 1}

PAPER_ALPHA = {"happy": 35.0, "neutral": 0.0, "sad": -35.0, "angry": 35.0}
# The paper does not state its ECAPA's vector norm. The reference is the median norm of vpeval's `ecapa`
# encoder (an ECAPA-TDNN of the paper's kind: 192-d, AAM-softmax, no output normalisation) as
# experiments/emotion-embedding.yaml trains it: there the paper's alpha applies unscaled.
REFERENCE_NORM = 22.0


class EmotionCompensation(EmbeddingAnonymizer):
    """An embedding anonymizer (OHNN by default) followed by SVM-normal emotion compensation."""

    name: ClassVar[str] = "emotion-compensation"

    class Params(PoolParams):
        """Paper defaults: OHNN base, alpha 35 / 0 / -35 / 35, SVMs on original embeddings."""

        base: Annotated[str, PluginRef("anonymizer", params="base_params", works_on="embedding")] = Field(
            "ohnn", description="The embedding anonymizer whose output is compensated."
        )
        base_params: dict = Field(
            default_factory=dict,
            description="Its parameters; pool, encoder and pool_vectors default to this plugin's own.",
        )
        emotion_corpus: CorpusSpec = Field(
            default_factory=lambda: CorpusSpec(use="synth", params=dict(DEFAULT_EMOTION_CORPUS)),
            description="Emotion-labelled corpus the SVMs and the indicator learn from (utterance emotion field; "
            "default: the synth 'emotion' preset, 24 speakers x 24 utterances, a seed of its own).",
        )
        emotion_vectors: str | None = Field(
            None, description="Precomputed .npz (embeddings, speakers, emotions) used instead of emotion_corpus."
        )
        alpha: dict[str, Annotated[float, Field(ge=-1000.0, le=1000.0)]] = Field(
            default_factory=lambda: dict(PAPER_ALPHA),
            description="Step along each emotion's unit SVM normal; its keys are the emotions modelled.",
        )
        indicator: Literal["auto", "emotion2vec", "classifier", "prosody", "label"] = Field(
            "auto",
            description="How the source emotion is found: 'auto', emotion2vec when emotion2vec_folder is given, "
            "else prosody with emotion_corpus audio and classifier with emotion_vectors; 'emotion2vec', the "
            "paper's emotion2vec+ from emotion2vec_folder (9 classes mapped to 4 as the paper maps them; needs "
            "the funasr package); 'prosody', a classifier on the utterance's prosodic audio "
            "features (vpeval's packaged stand-in for emotion2vec+; needs emotion_corpus audio); "
            "'classifier', one on the original embedding (for embedding-only data); "
            "'label', the utterance's emotion label (the paper's oracle setting used to tune alpha).",
        )
        emotion2vec_folder: str | None = Field(
            None,
            description="A local emotion2vec+ folder (FunASR / ModelScope layout: model.pt, config.yaml, tokens.txt; "
            "emotion2vec_plus_large in the paper), read without any hub; makes 'auto' the paper's indicator.",
        )
        svm_c: float = Field(1.0, gt=0.0, le=1e6, description="LinearSVC regularisation C.")
        alpha_units: Literal["relative", "absolute"] = Field(
            "relative",
            description="'relative': alpha is multiplied by (median norm of the emotion data's vectors / "
            "alpha_reference_norm), so the paper's 35 means the same step relative to the vectors for any "
            "encoder; 'absolute': alpha is used as is, in the encoder's own units (Eq. 1 literally).",
        )
        alpha_reference_norm: float = Field(
            REFERENCE_NORM,
            gt=0.0,
            le=1e6,
            description=f"Vector norm the alpha values refer to in relative units (default {REFERENCE_NORM}: the "
            "median norm of the ECAPA-TDNN trained by experiments/emotion-embedding.yaml; the paper does not "
            "state its ECAPA's).",
        )

    @property
    def indicator(self) -> str:
        """The indicator in use: 'auto' reads audio when the emotion data has audio."""
        if self.params.indicator != "auto":
            return self.params.indicator
        if self.params.emotion2vec_folder:
            return "emotion2vec"
        return "classifier" if self.params.emotion_vectors else "prosody"

    @classmethod
    def missing_paths(cls, params) -> list[str]:
        from vpeval_embedding_anonymizers.emotion2vec import folder_problems

        if params.indicator == "emotion2vec" or params.emotion2vec_folder:
            return folder_problems(params.emotion2vec_folder)
        return []

    def base_anonymizer(self):
        from vpeval_embedding_anonymizers.ohnn import OHNNAnonymizer
        from vpeval_embedding_anonymizers.selection import Selection

        params = {
            "pool": self.params.pool.model_dump(),
            "encoder": self.params.encoder.model_dump(),
            "pool_vectors": self.params.pool_vectors,
            **self.params.base_params,
        }
        ours = {cls.name: cls for cls in (OHNNAnonymizer, Selection)}
        if self.params.base in ours:
            cls = ours[self.params.base]
            return cls(cls.Params(**params), self.context.child(f"base-{cls.name}"))
        return self.context.get("anonymizer", self.params.base, self.params.base_params)

    def prepare(self) -> None:
        if self._prepared:
            return
        self.base = self.base_anonymizer()
        self.base.prepare()
        emotion_data = load_pool(
            self.context, self.params.emotion_vectors, self.params.emotion_corpus, self.params.encoder
        )
        self.fit(emotion_data)
        if self.indicator == "prosody":
            self.prosody_model = self.fit_prosody_indicator()
        if self.indicator == "emotion2vec":
            from vpeval_embedding_anonymizers.emotion2vec import Emotion2vecIndicator

            self.emotion2vec = Emotion2vecIndicator(self.params.emotion2vec_folder, self.context.device, self.emotions)
        self._prepared = True

    def fit_prosody_indicator(self):
        """Balanced logistic regression on prosodic features of the emotion corpus's audio."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        from vpeval_prosody import FEATURE_VERSION, RATE, prosodic_features

        if self.params.emotion_vectors:
            raise DataError(
                "emotion-compensation indicator 'prosody' needs audio: set emotion_corpus, not emotion_vectors."
            )
        spec = self.params.emotion_corpus
        corpus = self.context.get("corpus", spec.use, dict(spec.params)).load()
        utts = [u for u in corpus.utterances if u.emotion in self.params.alpha]
        key = stable_int(corpus.fingerprint or corpus.name, RATE, FEATURE_VERSION)
        cache = self.context.folder("prosody") / f"{key:016x}.npz"
        if cache.is_file():
            with np.load(cache) as data:
                features = data["features"]
        else:
            items = self.context.progress(utts, total=len(utts), description="emotion indicator: prosody")
            features = np.stack([prosodic_features(u.load(RATE), RATE) for u in items])
            np.savez(cache, features=features)
        labels = [u.emotion for u in utts]
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000, class_weight="balanced"))
        return model.fit(features, labels)

    def fit(self, data: PoolEmbeddings) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import LinearSVC

        self.emotions = list(self.params.alpha)
        if data.emotions is None:
            raise DataError("emotion-compensation needs emotion labels; the emotion corpus/vectors have none.")
        keep = np.isin(data.emotions, self.emotions)
        x, labels = data.embeddings[keep], np.asarray(data.emotions)[keep]
        missing = sorted(set(self.emotions) - set(labels.tolist()))
        if missing:
            raise DataError(
                f"emotion-compensation alpha names {missing} but the emotion data has no such utterances; "
                "drop them from alpha or use a corpus that has them."
            )
        self.embedding_dim = x.shape[1]
        normals = []
        for emotion in self.emotions:
            svm = LinearSVC(C=self.params.svm_c, max_iter=20000, random_state=0).fit(x, labels == emotion)
            w = svm.coef_[0]
            normals.append(w / np.linalg.norm(w))
        self.normals = np.stack(normals)  # [E, D], unit normals pointing to "has emotion e"
        # Balanced classes: emotion corpora are mostly neutral, and UAR weighs every emotion equally.
        self.indicator_model = LogisticRegression(max_iter=2000, class_weight="balanced").fit(x, labels)
        self.alphas = np.array([self.params.alpha[e] for e in self.emotions]) * self.alpha_scale(x)

    def alpha_scale(self, x: np.ndarray) -> float:
        """Factor on the configured alphas: median vector norm / reference norm in relative units, else 1."""
        median_norm = float(np.median(np.linalg.norm(x, axis=1)))
        largest = max(abs(a) for a in self.params.alpha.values())
        if self.params.alpha_units == "absolute":
            if largest >= median_norm:
                self.context.log.warning(
                    "emotion-compensation: absolute alpha up to %g against vectors of median norm %.3g: the step "
                    "is longer than the speaker vector and replaces it; use alpha_units: relative.",
                    largest,
                    median_norm,
                )
            return 1.0
        scale = median_norm / self.params.alpha_reference_norm
        self.context.log.info(
            "emotion-compensation: vectors' median norm %.3g, reference %.3g: alpha up to %g becomes %.3g",
            median_norm,
            self.params.alpha_reference_norm,
            largest,
            largest * scale,
        )
        return scale

    @property
    def dim(self) -> int:
        return self.embedding_dim

    def source_emotions(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> list[str]:
        if self.indicator == "classifier":
            return self.indicator_model.predict(embeddings).tolist()
        if self.indicator in ("prosody", "emotion2vec"):
            missing = [v.key for v in voices if v.utterance is None or not hasattr(v.utterance, "load")]
            if missing:
                raise DataError(
                    f"emotion-compensation indicator '{self.indicator}' needs each voice's utterance audio; "
                    f"{missing[0]} has none; use indicator: classifier."
                )
            if self.indicator == "emotion2vec":
                return [self.emotion2vec_label(v.utterance) for v in voices]
            return self.prosody_model.predict(np.stack([self.utterance_features(v.utterance) for v in voices])).tolist()
        labels = [v.utterance.emotion if v.utterance is not None else None for v in voices]
        unknown = [v.key for v, e in zip(voices, labels, strict=True) if e not in self.params.alpha]
        if unknown:
            raise DataError(
                f"emotion-compensation indicator 'label' needs an emotion among {self.emotions} for every "
                f"utterance; {unknown[0]} has none; use indicator: classifier."
            )
        return labels

    def emotion2vec_label(self, utterance) -> str:
        """emotion2vec+'s (mapped) emotion of one utterance, remembered by path."""
        path = getattr(utterance, "path", None)
        memo = self.__dict__.setdefault("_emotion2vec", {})
        if path is None or path not in memo:
            label = self.emotion2vec.predict(utterance.load(16000))
            if path is None:
                return label
            memo[path] = label
        return memo[path]

    def utterance_features(self, utterance) -> np.ndarray:
        """Prosodic features of one utterance, remembered by path (evaluations ask again for the same)."""
        from vpeval_prosody import RATE, prosodic_features

        path = getattr(utterance, "path", None)
        if path is None:  # nothing stable to remember it by
            return prosodic_features(utterance.load(RATE), RATE)
        memo = self.__dict__.setdefault("_features", {})
        if path not in memo:
            memo[path] = prosodic_features(utterance.load(RATE), RATE)
        return memo[path]

    def transform(self, embeddings: np.ndarray, voices: Sequence[Voice]) -> np.ndarray:
        z = self.base.anonymize_embeddings(embeddings, voices)  # draws the pseudo-speaker first
        index = {e: i for i, e in enumerate(self.emotions)}
        rows = np.array([index[e] for e in self.source_emotions(embeddings, voices)])
        return z + self.alphas[rows, None] * self.normals[rows]
