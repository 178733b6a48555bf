"""Pool speakers' WORLD frames, analysed when a speaker is first chosen and cached on disk (vpeval_world.pool)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from vpeval.api import PluginContext, stable_int
from vpeval.types import Corpus
from vpeval_world.pool import PoolAnalysis, PoolFrameFiles, PoolFrames


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
        self.files = PoolFrameFiles(self.cache_file, self.audios, PoolAnalysis(**asdict(settings)))

    def cache_file(self, speaker: str, rate: int) -> Path:
        s = self.settings
        key = stable_int(
            self.corpus.fingerprint or self.corpus.name,
            speaker,
            rate,
            s.f0_method,
            s.frame_period,
            s.n_mels,
            s.n_ceps,
            s.max_seconds,
        )
        return self.context.folder("poolvc") / f"{key:016x}.npz"

    def audios(self, speaker: str, rate: int) -> Iterator[np.ndarray]:
        return (utt.load(rate) for utt in self.utterances[speaker])

    def prefetch(self, rate: int) -> None:
        """Analyse every pool speaker not yet on disk at this rate, with the run's workers.

        Called before the anonymization workers fork, so they read finished files instead of each
        analysing the same pool speakers again.
        """
        todo = self.files.missing(self.speakers, rate)
        self.context.map(lambda speaker: self.files.store(speaker, rate), todo, "poolvc: pool speakers")

    def target(self, speaker: str, rate: int) -> PoolFrames:
        return self.files.frames(speaker, rate)
