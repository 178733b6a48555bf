"""Pool speakers' WORLD frames, analysed when a speaker is first chosen and cached on disk."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vpeval.api import PluginContext, stable_int
from vpeval.types import Corpus

from vpeval_world.matching import envelope_cepstra, mean_normalised
from vpeval_world.vocoder import analyse


@dataclass
class TargetSpeaker:
    log_sp: np.ndarray  # [N, bins] log spectral envelopes of the speaker's frames
    cepstra: np.ndarray  # [N, C] their speaker-mean-normalised mel cepstra (the kNN keys)
    logf0_mean: float
    logf0_std: float


@dataclass
class AnalysisSettings:
    f0_method: str
    frame_period: float
    n_mels: int
    n_ceps: int
    max_seconds: float


class PoolSpeakers:
    def __init__(self, corpus: Corpus, context: PluginContext, settings: AnalysisSettings):
        self.corpus = corpus
        self.context = context
        self.settings = settings
        by_speaker: dict[str, list] = {}
        for utt in corpus.utterances:
            by_speaker.setdefault(utt.speaker, []).append(utt)
        self.utterances = by_speaker
        self.speakers = sorted(by_speaker)
        self._memory: dict[tuple[str, int], TargetSpeaker] = {}

    def cache_file(self, speaker: str, rate: int) -> Path:
        s = self.settings
        key = stable_int(self.corpus.fingerprint or self.corpus.name, speaker, rate, s.f0_method, s.frame_period,
                         s.n_mels, s.n_ceps, s.max_seconds)
        return self.context.folder("poolvc") / f"{key:016x}.npz"

    def prefetch(self, rate: int) -> None:
        """Analyse every pool speaker not yet on disk at this rate, with the run's workers.

        Called before the anonymization workers fork, so they read finished files instead of each
        analysing the same pool speakers again.
        """
        todo = [s for s in self.speakers if not self.cache_file(s, rate).is_file()]
        self.context.map(lambda speaker: self.store(speaker, rate), todo, "poolvc: pool speakers")

    def store(self, speaker: str, rate: int) -> None:
        path = self.cache_file(speaker, rate)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(temporary, **self.analyse_speaker(speaker, rate))
        temporary.replace(path)  # atomic: a parallel worker never reads a half-written file

    def target(self, speaker: str, rate: int) -> TargetSpeaker:
        if (speaker, rate) not in self._memory:
            path = self.cache_file(speaker, rate)
            if not path.is_file():
                self.store(speaker, rate)
            with np.load(path) as data:
                self._memory[(speaker, rate)] = TargetSpeaker(
                    log_sp=data["log_sp"], cepstra=data["cepstra"],
                    logf0_mean=float(data["logf0"][0]), logf0_std=float(data["logf0"][1]),
                )
        return self._memory[(speaker, rate)]

    def analyse_speaker(self, speaker: str, rate: int) -> dict[str, np.ndarray]:
        s = self.settings
        log_sp, ceps, logf0 = [], [], []
        seconds = 0.0
        for utt in self.utterances[speaker]:
            if seconds >= s.max_seconds:
                break
            audio = utt.load(rate)
            seconds += len(audio) / rate
            feats = analyse(audio, rate, s.f0_method, s.frame_period, aperiodicity=False)  # only F0 and sp used
            log_sp.append(np.log(feats.sp + 1e-12).astype(np.float32))
            ceps.append(envelope_cepstra(feats.sp, rate, s.n_mels, s.n_ceps))
            logf0.append(np.log(feats.f0[feats.f0 > 0]))
        cepstra = np.concatenate(ceps)
        voiced = np.concatenate(logf0)
        stats = [voiced.mean(), voiced.std()] if len(voiced) > 1 else [np.log(120.0), 0.1]
        return {
            "log_sp": np.concatenate(log_sp),
            "cepstra": mean_normalised(cepstra).astype(np.float32),  # speaker mean over all its frames
            "logf0": np.array(stats),
        }
