"""Pool voices: a pool corpus grouped into voices (speakers, or speaker x emotion), each with its mean
speaker vector, WORLD envelope frames (the kNN values), their content keys and log-F0 statistics
(vpeval_world.pool).

Speaker x emotion voices let a mixture reach vectors that an emotion edit moved: the pool speakers'
happy or sad utterances sit elsewhere in the encoder's space than their neutral ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from vpeval.api import PluginContext, stable_int
from vpeval.speakers import PoolEmbeddings
from vpeval.types import Corpus
from vpeval_world.pool import PoolAnalysis, PoolFrameFiles, PoolFrames


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

    def __init__(
        self, corpus: Corpus, vectors: PoolEmbeddings, by_emotion: bool, context: PluginContext, analysis: Analysis
    ):
        self.corpus, self.context, self.analysis = corpus, context, analysis
        self.members: dict[str, list] = {}
        for utt in corpus.utterances:
            self.members.setdefault(voice_id(utt.speaker, utt.emotion, by_emotion), []).append(utt)
        self.ids = sorted(self.members)
        # Mean vector per voice, from the encoder's per-utterance vectors (same order as the corpus).
        emotions = vectors.emotions if vectors.emotions is not None else [None] * len(vectors.speakers)
        rows = np.array(
            [
                self.ids.index(voice_id(s, e or None, by_emotion))
                for s, e in zip(vectors.speakers, emotions, strict=True)
            ]
        )
        sums = np.zeros((len(self.ids), vectors.embeddings.shape[1]))
        np.add.at(sums, rows, vectors.embeddings)
        self.means = sums / np.bincount(rows, minlength=len(self.ids))[:, None]
        self.files = PoolFrameFiles(self.cache_file, self.audios, PoolAnalysis(**asdict(analysis)))  # dio F0

    def cache_file(self, voice: str, rate: int) -> Path:
        a = self.analysis
        key = stable_int(
            self.corpus.fingerprint or self.corpus.name, voice, rate, a.frame_period, a.n_mels, a.n_ceps, a.max_seconds
        )
        return self.context.folder("voices") / f"{key:016x}.npz"

    def audios(self, voice: str, rate: int) -> Iterator[np.ndarray]:
        return (utt.load(rate) for utt in self.members[voice])

    def prefetch(self, rate: int) -> None:
        """Analyse every voice not on disk yet, with the run's workers, before anonymization forks."""
        todo = self.files.missing(self.ids, rate)
        self.context.map(lambda v: self.files.store(v, rate), todo, "vector-vc: pool voices")

    def frames(self, voice: str, rate: int) -> PoolFrames:
        return self.files.frames(voice, rate)
