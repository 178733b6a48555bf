"""Pool voices' WORLD frames for kNN matching: analysed once per voice and rate, kept on disk and in memory.

Shared by poolvc (a voice per pool speaker) and vector-vc (per speaker, or speaker x emotion). A voice's
frames are the log envelopes of its first utterances, up to max_seconds of audio, their mel cepstra
mean-normalised over the voice (the kNN keys; the log envelopes are the values) and its log-F0 mean and
standard deviation over voiced frames.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vpeval_world.matching import envelope_cepstra, mean_normalised
from vpeval_world.vocoder import analyse

UNVOICED_LOGF0 = (float(np.log(120.0)), 0.1)  # log-F0 mean and spread of a voice with at most one voiced frame


@dataclass(frozen=True)
class PoolAnalysis:
    frame_period: float
    n_mels: int
    n_ceps: int
    max_seconds: float
    f0_method: str = "dio"


@dataclass
class PoolFrames:
    log_sp: np.ndarray  # [N, bins] float32 log power envelopes of the voice's frames (the kNN values)
    cepstra: np.ndarray  # [N, C] float32 their voice-mean-normalised mel cepstra (the kNN keys)
    logf0_mean: float
    logf0_std: float


def analyse_voice(audios: Iterable[np.ndarray], rate: int, analysis: PoolAnalysis) -> dict[str, np.ndarray]:
    """The npz arrays of one voice from its utterances' audio, read lazily: none after max_seconds."""
    a = analysis
    log_sp, cepstra, logf0 = [], [], []
    seconds = 0.0
    for audio in audios:
        seconds += len(audio) / rate
        feats = analyse(audio, rate, a.f0_method, a.frame_period, aperiodicity=False)  # only F0 and sp used
        log_sp.append(np.log(feats.sp + 1e-12).astype(np.float32))
        cepstra.append(envelope_cepstra(feats.sp, rate, a.n_mels, a.n_ceps))
        logf0.append(np.log(feats.f0[feats.f0 > 0]))
        if seconds >= a.max_seconds:
            break
    voiced = np.concatenate(logf0)
    stats = [voiced.mean(), voiced.std()] if len(voiced) > 1 else list(UNVOICED_LOGF0)
    return {
        "log_sp": np.concatenate(log_sp),
        "cepstra": mean_normalised(np.concatenate(cepstra)).astype(np.float32),  # mean over all its frames
        "logf0": np.array(stats),
    }


class PoolFrameFiles:
    """One npz file per voice and rate, at file_of(voice, rate); audios_of(voice, rate) yields its audio."""

    def __init__(
        self,
        file_of: Callable[[str, int], Path],
        audios_of: Callable[[str, int], Iterable[np.ndarray]],
        analysis: PoolAnalysis,
    ):
        self.file_of, self.audios_of, self.analysis = file_of, audios_of, analysis
        self._memory: dict[tuple[str, int], PoolFrames] = {}

    def missing(self, voices: Iterable[str], rate: int) -> list[str]:
        """The voices not on disk yet at this rate (to analyse with the run's workers before they fork)."""
        return [v for v in voices if not self.file_of(v, rate).is_file()]

    def store(self, voice: str, rate: int) -> None:
        path = self.file_of(voice, rate)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(temporary, **analyse_voice(self.audios_of(voice, rate), rate, self.analysis))
        temporary.replace(path)  # atomic: a parallel worker never reads a half-written file

    def frames(self, voice: str, rate: int) -> PoolFrames:
        if (voice, rate) not in self._memory:
            path = self.file_of(voice, rate)
            if not path.is_file():
                self.store(voice, rate)
            with np.load(path) as data:
                self._memory[(voice, rate)] = PoolFrames(
                    log_sp=data["log_sp"],
                    cepstra=data["cepstra"],
                    logf0_mean=float(data["logf0"][0]),
                    logf0_std=float(data["logf0"][1]),
                )
        return self._memory[(voice, rate)]
