"""poolvc: convert an utterance to a pool speaker's voice without training.

1. choose a pool speaker (see choice.py), drawing from the voice's rng first;
2. WORLD analysis of the source (F0, spectral envelope, aperiodicity) at the input rate;
3. spectral envelope: for every source frame, the mean log envelope of the k = 4 pool-speaker frames
   whose mean-normalised mel cepstra are nearest (kNN-VC's matching, on WORLD envelopes), rescaled
   to the source frame's energy;
4. F0: log-F0 moved to the pool speaker's mean and spread (Gaussian normalisation);
5. aperiodicity kept; WORLD synthesis at the input rate, trimmed to the input length.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from vpeval.api import Anonymizer, Params, PluginRef, Voice
from vpeval.errors import DataError
from vpeval.speakers import POOL_SEED, CorpusSpec, EncoderSpec, embed_corpus, embedding_anonymizer_in_space
from vpeval_poolvc.choice import farthest_count, farthest_random_choice, nearest_speaker, random_choice
from vpeval_poolvc.pool import AnalysisSettings, PoolSpeakers
from vpeval_world.matching import envelope_cepstra, knn_average, mean_normalised
from vpeval_world.vocoder import WorldFeatures, analyse, synthesize

MIN_SECONDS = 0.1  # WORLD needs a few frames; shorter input is zero-padded for analysis
# The default pool: 20 speakers of the built-in synth corpus with a seed of their own, so the pool is
# speaker-disjoint from an evaluation corpus generated with the experiment seed.
DEFAULT_POOL = {"preset": "tiny", "speakers": 20, "seed": POOL_SEED}


class PoolVC(Anonymizer):
    """Training-free voice conversion to an external pool speaker (WORLD + kNN envelope matching)."""

    name: ClassVar[str] = "poolvc"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """Pool, pseudo-speaker choice and WORLD/kNN settings."""

        pool: CorpusSpec = Field(
            default_factory=lambda: CorpusSpec(use="synth", params=dict(DEFAULT_POOL)),
            description="External pool corpus {use, params}, speaker-disjoint from the evaluation data "
            "(default: 20 synth speakers, preset tiny, with a seed of their own).",
        )
        selection: Annotated[
            str,
            PluginRef(
                "anonymizer", params="selection_params", works_on="embedding", keywords=("random", "farthest-random")
            ),
        ] = Field(
            "farthest-random",
            description="'farthest-random' (B1 rule; needs encoder, else falls back to 'random'), 'random', or "
            "the name of an embedding anonymizer whose pseudo-speaker vector picks the nearest pool speaker.",
        )
        selection_params: dict[str, Any] = Field(
            default_factory=dict, description="Parameters of the embedding anonymizer named in selection."
        )
        encoder: EncoderSpec | None = Field(
            None, description="Speaker encoder {use, params} for farthest-random and embedding-anonymizer choice."
        )
        farthest: int = Field(
            200,
            ge=1,
            le=100_000,
            description="Farthest pool speakers to pick from (B1: 200 of 1,160; smaller pools scale).",
        )
        k: int = Field(4, ge=1, le=1000, description="Nearest pool frames averaged per source frame (kNN-VC: 4).")
        f0_method: Literal["dio", "harvest"] = Field(
            "dio", description="WORLD F0 estimator: dio + stonemask (fast) or harvest (robust, ~10x slower)."
        )
        # Bounds: shorter WORLD frames multiply the frames (and memory) without limit; more bands than
        # the spectral envelope's bins, or more cepstra than bands, mean nothing.
        frame_period: float = Field(5.0, ge=1.0, le=50.0, description="WORLD frame period in ms.")
        n_mels: int = Field(40, ge=8, le=128, description="Mel bands of the matching cepstra.")
        n_ceps: int = Field(
            20, ge=2, le=128, description="Cepstra per frame, at most n_mels (c0, the energy, is dropped)."
        )
        max_pool_seconds: float = Field(
            120.0, gt=0.0, le=3600.0, description="Speech analysed per pool speaker at most."
        )
        normalize: bool = Field(True, description="Scale the output to the input's peak amplitude.")

        @field_validator("n_ceps")
        @classmethod
        def _ceps_within_bands(cls, value, info):
            bands = info.data.get("n_mels")
            if bands is not None and value > bands:
                raise ValueError(
                    f"n_ceps ({value}) must not exceed n_mels ({bands}): a DCT of {bands} bands has {bands} cepstra"
                )
            return value

    def prepare(self) -> None:
        if getattr(self, "_pool", None) is not None:
            return
        p = self.params
        corpus = self.context.get("corpus", p.pool.use, dict(p.pool.params)).load()
        if len({u.speaker for u in corpus.utterances}) < 2:
            raise DataError(f"poolvc pool corpus {p.pool.use} needs at least two speakers; name a larger pool.")
        settings = AnalysisSettings(p.f0_method, p.frame_period, p.n_mels, p.n_ceps, p.max_pool_seconds)
        self._pool = PoolSpeakers(corpus, self.context, settings)
        rates = {u.sample_rate for u in corpus.utterances if u.sample_rate}
        if len(rates) == 1:  # analyse the pool now, in parallel, before the anonymization workers fork
            self._pool.prefetch(rates.pop())
        self._mode = p.selection
        if p.selection in ("random", "farthest-random") and p.encoder is None:
            if p.selection == "farthest-random":
                self.context.log.info("poolvc: no encoder named, choosing pool speakers at random")
            self._mode = "random"
        if self._mode != "random":
            if p.encoder is None:
                # an embedding anonymizer's name: a misspelt one is reported as such, not as a missing encoder
                self.context.get("anonymizer", p.selection, dict(p.selection_params))
                raise DataError(f"poolvc selection '{p.selection}' needs an encoder; set encoder: {{use: ge2e}}.")
            self._encoder = self.context.get("encoder", p.encoder.use, dict(p.encoder.params))
            self._means = embed_corpus(self.context, p.pool, p.encoder).speaker_means
        if self._mode not in ("random", "farthest-random"):
            self._embedding_anonymizer = self.make_embedding_anonymizer()
            self._embedding_anonymizer.prepare()

    def make_embedding_anonymizer(self) -> Anonymizer:
        """The anonymizer named in `selection`, through the core. Its vectors must live in this pool's
        encoder space, so it gets poolvc's pool and encoder where its parameters have fields of those
        names (as the embedding anonymizers of vpeval-embedding-anonymizers do) and selection_params
        does not set them."""
        p = self.params
        return embedding_anonymizer_in_space(
            self.context,
            p.selection,
            p.selection_params,
            p.pool,
            p.encoder,
            f"poolvc selection '{p.selection}' does not work on speaker embeddings; name "
            "'random', 'farthest-random' or an embedding anonymizer such as selection or ohnn.",
        )

    def choose_speaker(self, audio: np.ndarray, rate: int, voice: Voice) -> str:
        speakers = self._pool.speakers
        if self._mode == "random":
            return speakers[random_choice(len(speakers), voice)]
        if self._mode == "farthest-random":
            draw = float(voice.rng.random())  # the voice's draw first: fixed per speaker key
            n_far = farthest_count(len(speakers), self.params.farthest)
            return speakers[farthest_random_choice(self.embed(audio, rate), self._means, n_far, draw)]
        pseudo = self._embedding_anonymizer.anonymize_embeddings(self.embed(audio, rate)[None], [voice])[0]
        return speakers[nearest_speaker(pseudo, self._means)]

    def embed(self, audio: np.ndarray, rate: int) -> np.ndarray:
        from vpeval.audio import resample

        return np.asarray(self._encoder.embed(resample(audio, rate, self._encoder.sample_rate)), dtype=np.float64)

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        self.prepare()
        audio = np.asarray(audio, dtype=np.float32)
        speaker = self.choose_speaker(audio, sample_rate, voice)
        return self.convert(audio, sample_rate, speaker)

    def convert(self, audio: np.ndarray, rate: int, speaker: str) -> np.ndarray:
        p = self.params
        padded = np.zeros(max(len(audio), int(MIN_SECONDS * rate)), dtype=np.float64)
        padded[: len(audio)] = audio
        source = analyse(padded, rate, p.f0_method, p.frame_period)
        target = self._pool.target(speaker, rate)
        query = mean_normalised(envelope_cepstra(source.sp, rate, p.n_mels, p.n_ceps))
        sp = np.exp(knn_average(query, target.cepstra, target.log_sp, p.k).astype(np.float64))
        # Keep the source's frame energies: the match chooses timbre, not loudness.
        sp *= (source.sp.sum(axis=1) / np.maximum(sp.sum(axis=1), 1e-20))[:, None]
        f0 = convert_f0(source.f0, target.logf0_mean, target.logf0_std)
        out = synthesize(WorldFeatures(f0, sp, source.ap), rate, len(padded), p.frame_period)[: len(audio)]
        if p.normalize:
            peak = float(np.max(np.abs(out)))
            if peak > 0:
                out *= float(np.max(np.abs(audio))) / peak
        return np.nan_to_num(out).astype(np.float32)


def convert_f0(f0: np.ndarray, target_mean: float, target_std: float) -> np.ndarray:
    """Voiced log-F0 Gaussian-normalised from the utterance's own statistics to the target's."""
    voiced = f0 > 0
    if voiced.sum() < 2:
        return f0.copy()
    log_f0 = np.log(f0[voiced])
    std = log_f0.std()
    z = (log_f0 - log_f0.mean()) / std if std > 1e-6 else np.zeros_like(log_f0)
    out = np.zeros_like(f0)
    out[voiced] = np.exp(target_mean + z * target_std)
    return out
