"""Pool voices: a pool corpus grouped into voices (speakers, or speaker x emotion), each with its mean
speaker vector, WORLD envelope frames (the kNN values), their content keys and log-F0 statistics.

Speaker x emotion voices let a mixture reach vectors that an emotion edit moved: the pool speakers'
happy or sad utterances sit elsewhere in the encoder's space than their neutral ones.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vpeval.api import PluginContext, stable_int
from vpeval.speakers import PoolEmbeddings
from vpeval.types import Corpus

from vpeval_world.matching import envelope_cepstra, mean_normalised
from vpeval_world.vocoder import analyse


@dataclass
class VoiceFrames:
    log_sp: np.ndarray  # [N, bins] log power envelopes
    keys: np.ndarray  # [N, C] mean-normalised mel cepstra
    logf0_mean: float
    logf0_std: float


@dataclass(frozen=True)
class Analysis:
    frame_period: float
    n_mels: int
    n_ceps: int
    max_seconds: float


def voice_id(speaker: str, emotion: str | None, by_emotion: bool) -> str:
    return f"{speaker}/{emotion or 'neutral'}" if by_emotion else speaker


class PoolVoices:
    """Voices of a pool corpus; frames analysed per voice on first use and cached on disk."""

    def __init__(self, corpus: Corpus, vectors: PoolEmbeddings, by_emotion: bool, context: PluginContext,
                 analysis: Analysis):
        self.corpus, self.context, self.analysis = corpus, context, analysis
        self.members: dict[str, list] = {}
        for utt in corpus.utterances:
            self.members.setdefault(voice_id(utt.speaker, utt.emotion, by_emotion), []).append(utt)
        self.ids = sorted(self.members)
        # Mean vector per voice, from the encoder's per-utterance vectors (same order as the corpus).
        emotions = vectors.emotions if vectors.emotions is not None else [None] * len(vectors.speakers)
        rows = np.array([self.ids.index(voice_id(s, e or None, by_emotion))
                         for s, e in zip(vectors.speakers, emotions, strict=True)])
        sums = np.zeros((len(self.ids), vectors.embeddings.shape[1]))
        np.add.at(sums, rows, vectors.embeddings)
        self.means = sums / np.bincount(rows, minlength=len(self.ids))[:, None]
        self._memory: dict[tuple[str, int], VoiceFrames] = {}

    def cache_file(self, voice: str, rate: int) -> Path:
        a = self.analysis
        key = stable_int(self.corpus.fingerprint or self.corpus.name, voice, rate, a.frame_period, a.n_mels,
                         a.n_ceps, a.max_seconds)
        return self.context.folder("voices") / f"{key:016x}.npz"

    def prefetch(self, rate: int) -> None:
        """Analyse every voice not on disk yet, with the run's workers, before anonymization forks."""
        todo = [v for v in self.ids if not self.cache_file(v, rate).is_file()]
        self.context.map(lambda v: self.store(v, rate), todo, "vector-vc: pool voices")

    def store(self, voice: str, rate: int) -> None:
        path = self.cache_file(voice, rate)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(temporary, **self.analyse_voice(voice, rate))
        temporary.replace(path)  # atomic: a parallel worker never reads half a file

    def frames(self, voice: str, rate: int) -> VoiceFrames:
        if (voice, rate) not in self._memory:
            path = self.cache_file(voice, rate)
            if not path.is_file():
                self.store(voice, rate)
            with np.load(path) as data:
                self._memory[(voice, rate)] = VoiceFrames(data["log_sp"], data["keys"], float(data["logf0"][0]),
                                                          float(data["logf0"][1]))
        return self._memory[(voice, rate)]

    def analyse_voice(self, voice: str, rate: int) -> dict[str, np.ndarray]:
        a = self.analysis
        log_sp, keys, logf0 = [], [], []
        seconds = 0.0
        for utt in self.members[voice]:
            if seconds >= a.max_seconds:
                break
            audio = utt.load(rate)
            seconds += len(audio) / rate
            feats = analyse(audio, rate, frame_period=a.frame_period, aperiodicity=False)
            log_sp.append(np.log(feats.sp + 1e-12).astype(np.float32))
            keys.append(envelope_cepstra(feats.sp, rate, a.n_mels, a.n_ceps))
            logf0.append(np.log(feats.f0[feats.f0 > 0]))
        voiced = np.concatenate(logf0)
        stats = [voiced.mean(), voiced.std()] if len(voiced) > 1 else [np.log(120.0), 0.1]
        return {"log_sp": np.concatenate(log_sp), "keys": mean_normalised(np.concatenate(keys)).astype(np.float32),
                "logf0": np.array(stats)}
