"""vector-vc: speak an utterance's content with a continuous pseudo-speaker vector.

1. the source's speaker vector x (the `encoder`), anonymized by the embedding anonymizer named in
   `anonymizer` (selection, ohnn, emotion-compensation, a chain's last link...) to the requested z,
   drawing from the voice's rng;
2. non-negative least squares weights over the pool voices' unit mean vectors so that their weighted
   sum points where z points (at most `max_voices` voices);
3. WORLD analysis of the source; each source frame's envelope becomes the weighted mean, in the log
   domain, of every mixed voice's k nearest frames (content keys: mean-normalised mel cepstra),
   rescaled to the source frame's energy; log-F0 mapped to the mixture's mean and spread, keeping the
   source's contour shape; aperiodicity and timing kept;
4. the output is embedded with the same encoder; `refine_steps` times the target is moved by the
   miss (z - obtained) and the weights refitted; the output closest to z by cosine is kept.

The requested-vs-obtained cosine of every utterance is logged and kept (`fidelity_summary`).
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Anonymizer, Params, PluginRef, Voice
from vpeval.errors import ConfigError, DataError
from vpeval.speakers import (
    POOL_SEED,
    CorpusSpec,
    EncoderSpec,
    embed_corpus,
    embedding_anonymizer_in_space,
    speaker_vector,
)
from vpeval_vecvc.mixing import fit_weights, nearest_weights, unit
from vpeval_vecvc.pool import Analysis, PoolVoices
from vpeval_world.matching import envelope_cepstra, knn_average, mean_normalised
from vpeval_world.vocoder import WorldFeatures, analyse, synthesize

MIN_SECONDS = 0.1  # WORLD needs a few frames; shorter input is zero-padded for analysis
DEFAULT_POOL = {"preset": "tiny", "speakers": 20, "seed": POOL_SEED}


class VectorVC(Anonymizer):
    """Voice conversion to a pool-voice mixture fitted to a continuous pseudo-speaker vector (WORLD)."""

    name: ClassVar[str] = "vector-vc"
    works_on: ClassVar[tuple[str, ...]] = ("waveform",)
    sample_rate: ClassVar[int | None] = None

    class Params(Params):
        """Embedding anonymizer, pool, mixing and WORLD settings."""

        anonymizer: Annotated[str, PluginRef("anonymizer", params="anonymizer_params", works_on="embedding")] = Field(
            "ohnn",
            description="Embedding anonymizer that turns the source's speaker vector into the requested "
            "pseudo-speaker vector (selection, ohnn, emotion-compensation, ...).",
        )
        anonymizer_params: dict[str, Any] = Field(
            default_factory=dict, description="Its parameters; pool and encoder default to this plugin's."
        )
        pool: CorpusSpec = Field(
            default_factory=lambda: CorpusSpec(use="synth", params=dict(DEFAULT_POOL)),
            description="Pool corpus {use, params}, speaker-disjoint from the evaluation data (default: 20 synth "
            "speakers, preset tiny, a seed of their own).",
        )
        encoder: EncoderSpec = Field(
            default_factory=lambda: EncoderSpec(use="ge2e"),
            description="Speaker encoder {use, params} whose space the vectors live in (default: pretrained GE2E).",
        )
        voices: Literal["speaker-emotion", "speaker"] = Field(
            "speaker-emotion",
            description="Pool voices to mix: each speaker's utterances per emotion label "
            "(emotion edits can reach emotional voices), or whole speakers.",
        )
        mixing: Literal["fit", "nearest"] = Field(
            "fit",
            description="'fit': non-negative least squares mixture of pool voices; 'nearest': all weight on "
            "the nearest voice (snapping, as poolvc does; for comparison).",
        )
        max_voices: int = Field(6, ge=1, le=64, description="Pool voices mixed at most per utterance.")
        refine_steps: int = Field(2, ge=0, le=10, description="Re-embed-and-refit steps after the first synthesis.")
        f0_spread: Literal["mixture", "utterance"] = Field(
            "mixture",
            description="log-F0 spread after conversion: the mixture's, or the utterance's own (the "
            "mean always moves to the mixture's).",
        )
        k: int = Field(4, ge=1, le=1000, description="Nearest pool frames averaged per source frame and voice.")
        frame_period: float = Field(5.0, ge=1.0, le=50.0, description="WORLD frame period in ms.")
        n_mels: int = Field(40, ge=8, le=128, description="Mel bands of the matching cepstra.")
        n_ceps: int = Field(20, ge=2, le=128, description="Cepstra per frame, at most n_mels.")
        max_pool_seconds: float = Field(120.0, gt=0.0, le=3600.0, description="Speech analysed per pool voice at most.")
        normalize: bool = Field(True, description="Scale the output to the input's peak amplitude.")

    def prepare(self) -> None:
        if getattr(self, "_voices", None) is not None:
            return
        p = self.params
        if p.n_ceps > p.n_mels:
            raise ConfigError(f"vector-vc n_ceps ({p.n_ceps}) must not exceed n_mels ({p.n_mels}).")
        corpus = self.context.get("corpus", p.pool.use, dict(p.pool.params)).load()
        if len({u.speaker for u in corpus.utterances}) < 2:
            raise DataError(f"vector-vc pool corpus {p.pool.use} needs at least two speakers; name a larger pool.")
        self._encoder = self.context.get("encoder", p.encoder.use, dict(p.encoder.params))
        vectors = embed_corpus(self.context, p.pool, p.encoder)
        analysis = Analysis(p.frame_period, p.n_mels, p.n_ceps, p.max_pool_seconds)
        self._voices = PoolVoices(corpus, vectors, p.voices == "speaker-emotion", self.context, analysis)
        rates = {u.sample_rate for u in corpus.utterances if u.sample_rate}
        if len(rates) == 1:
            self._voices.prefetch(rates.pop())
        self._pseudo = self.make_embedding_anonymizer()
        self._pseudo.prepare()
        self.records: list[dict[str, Any]] = []

    def make_embedding_anonymizer(self) -> Anonymizer:
        """The named embedding anonymizer, through the core, given this plugin's pool and encoder where it
        has fields of those names that anonymizer_params leaves unset (its vectors must live in our space)."""
        p = self.params
        return embedding_anonymizer_in_space(
            self.context,
            p.anonymizer,
            p.anonymizer_params,
            p.pool,
            p.encoder,
            f"vector-vc anonymizer '{p.anonymizer}' does not work on speaker embeddings; name an "
            "embedding anonymizer such as selection, ohnn or emotion-compensation.",
        )

    def embed(self, audio: np.ndarray, rate: int) -> np.ndarray:
        return speaker_vector(self._encoder, audio, rate)

    def requested_vector(self, audio: np.ndarray, rate: int, voice: Voice) -> np.ndarray:
        """The pseudo-speaker vector the embedding anonymizer makes from the source's vector."""
        return self._pseudo.anonymize_embeddings(self.embed(audio, rate)[None], [voice])[0]

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        self.prepare()
        audio = np.asarray(audio, dtype=np.float32)
        requested = self.requested_vector(audio, sample_rate, voice)
        out, record = self.speak(audio, sample_rate, requested)
        self.log(voice.key, record)
        return out

    def speak(self, audio: np.ndarray, rate: int, requested: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """The source's content spoken with `requested`; returns the audio and its fidelity record."""
        p = self.params
        padded = np.zeros(max(len(audio), int(MIN_SECONDS * rate)), dtype=np.float64)
        padded[: len(audio)] = audio
        source = analyse(padded, rate, frame_period=p.frame_period)
        query = mean_normalised(envelope_cepstra(source.sp, rate, p.n_mels, p.n_ceps))
        renderer = _Renderer(self, source, query, rate, len(padded))
        goal = unit(requested)
        target = goal.copy()
        best: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None
        cosines = []
        steps = p.refine_steps if p.mixing == "fit" else 0
        for _step in range(steps + 1):
            means = self._voices.means
            weights = fit_weights(target, means, p.max_voices) if p.mixing == "fit" else nearest_weights(target, means)
            out = renderer.render(weights)[: len(audio)]
            obtained = unit(self.embed(out.astype(np.float32), rate))
            cosine = float(obtained @ goal)
            cosines.append(cosine)
            if best is None or cosine > best[0]:
                best = (cosine, out, obtained, weights)
            # Move the target by the miss: the mixture's embedding is not the mixture of embeddings, but
            # it moves the same way (a Gauss-Newton step with the identity as Jacobian).
            target = unit(target + (goal - obtained))
        cosine, out, obtained, weights = best
        if p.normalize:
            peak = float(np.max(np.abs(out)))
            if peak > 0:
                out = out * (float(np.max(np.abs(audio))) / peak)
        record = {
            "cosine": cosine,
            "first_cosine": cosines[0],
            "voices": int(np.count_nonzero(weights)),
            "obtained": obtained,
        }
        return np.nan_to_num(out).astype(np.float32), record

    def log(self, key: str, record: dict[str, Any]) -> None:
        row = {"key": key, **{k: v for k, v in record.items() if k != "obtained"}}
        self.records.append(row)
        self.context.log.info(
            "vector-vc %s: requested-vs-obtained cosine %.3f (first synthesis %.3f)",
            key,
            record["cosine"],
            record["first_cosine"],
        )
        # One line per utterance in the work folder, so runs with several worker processes keep them all.
        with open(self.context.folder("vector-vc") / "fidelity.jsonl", "a") as handle:
            handle.write(json.dumps({**row, "pid": os.getpid()}) + "\n")

    def fidelity_summary(self) -> dict[str, float]:
        """Requested-vs-obtained cosine over the utterances this instance anonymized."""
        if not getattr(self, "records", None):
            return {"utterances": 0}
        cos = np.array([r["cosine"] for r in self.records])
        first = np.array([r["first_cosine"] for r in self.records])
        return {
            "utterances": len(cos),
            "mean": float(cos.mean()),
            "median": float(np.median(cos)),
            "min": float(cos.min()),
            "first_synthesis_mean": float(first.mean()),
        }


class _Renderer:
    """Synthesizes one source utterance for many weight vectors, reusing per-voice kNN envelopes."""

    def __init__(self, owner: VectorVC, source: WorldFeatures, query: np.ndarray, rate: int, length: int):
        self.owner, self.source, self.query, self.rate, self.length = owner, source, query, rate, length
        self._knn: dict[int, np.ndarray] = {}
        self._energy = source.sp.sum(axis=1)

    def voice_envelope(self, index: int) -> np.ndarray:
        if index not in self._knn:
            frames = self.owner._voices.frames(self.owner._voices.ids[index], self.rate)
            self._knn[index] = knn_average(self.query, frames.cepstra, frames.log_sp, self.owner.params.k).astype(
                np.float64
            )
        return self._knn[index]

    def render(self, weights: np.ndarray) -> np.ndarray:
        p = self.owner.params
        used = np.flatnonzero(weights)
        log_sp = sum(weights[i] * self.voice_envelope(i) for i in used)
        sp = np.exp(log_sp)
        # Keep the source's frame energies: the mixture chooses timbre, not loudness.
        sp *= (self._energy / np.maximum(sp.sum(axis=1), 1e-20))[:, None]
        stats = [self.owner._voices.frames(self.owner._voices.ids[i], self.rate) for i in used]
        mean = float(sum(weights[i] * s.logf0_mean for i, s in zip(used, stats, strict=True)))
        spread = float(sum(weights[i] * s.logf0_std for i, s in zip(used, stats, strict=True)))
        f0 = map_f0(self.source.f0, mean, spread if p.f0_spread == "mixture" else None)
        return synthesize(WorldFeatures(f0, sp, self.source.ap), self.rate, self.length, p.frame_period)


def map_f0(f0: np.ndarray, target_mean: float, target_std: float | None) -> np.ndarray:
    """Voiced log-F0 moved to the target mean, and scaled to the target spread unless that is None:
    the contour's shape and timing are the source's."""
    voiced = f0 > 0
    if voiced.sum() < 2:
        return f0.copy()
    log_f0 = np.log(f0[voiced])
    centred_f0 = log_f0 - log_f0.mean()
    std = log_f0.std()
    if target_std is not None:
        centred_f0 = centred_f0 / std * target_std if std > 1e-6 else np.zeros_like(log_f0)
    out = np.zeros_like(f0)
    out[voiced] = np.exp(target_mean + centred_f0)
    return out
