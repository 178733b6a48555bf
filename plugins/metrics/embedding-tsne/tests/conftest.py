"""Small emotional speech (pitch, level and brightness by emotion, pitch by speaker) and a spectral-band encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vpeval.api import PluginContext, SpeakerEncoder
from vpeval.types import Corpus, Utterance

RATE = 16000
# pitch factor, level, harmonic tilt per emotion (the IEMOCAP labels of VPC's utt2emo)
STYLE = {"neu": (1.0, 0.2, 0.8), "hap": (1.3, 0.4, 0.9), "sad": (0.85, 0.08, 0.6), "ang": (1.2, 0.7, 0.95)}


def write_corpus(folder: Path, speakers: int = 4, per_emotion: int = 2, seed: int = 0, shift: float = 1.0) -> Corpus:
    """Harmonic bursts; `shift` scales every pitch (a crude 'anonymized' version of the same ids)."""
    folder.mkdir(parents=True, exist_ok=True)
    utterances = []
    for s in range(speakers):
        base = (110.0 if s % 2 else 200.0) * (1 + 0.1 * s) * shift
        for emotion, (factor, level, tilt) in STYLE.items():
            for k in range(per_emotion):
                rng = np.random.default_rng([seed, s, k, len(emotion), int(factor * 100)])
                t = np.arange(int(0.5 * RATE)) / RATE
                phase = 2 * np.pi * base * factor * rng.uniform(0.97, 1.03) * t
                voice = sum(tilt**h * np.sin(h * phase) for h in range(1, 10)) / 5
                audio = level * voice + rng.normal(0, 0.003, t.size)
                uid = f"s{s}-{emotion}-{k}"
                sf.write(folder / f"{uid}.wav", audio.astype(np.float32), RATE)
                utterances.append(Utterance(uid, f"s{s}", str(folder / f"{uid}.wav"), emotion=emotion))
    return Corpus(folder.name, utterances)


class BandEncoder(SpeakerEncoder):
    """Log energies of 24 linear frequency bands: a deterministic stand-in encoder for the tests."""

    name = "bands"
    dim = 24

    def embed(self, audio: np.ndarray) -> np.ndarray:
        spectrum = np.abs(np.fft.rfft(audio)) ** 2
        return np.log(np.array([band.sum() for band in np.array_split(spectrum, self.dim)]) + 1e-8).astype(np.float32)


def context(work: Path, seed: int = 3) -> PluginContext:
    return PluginContext(seed=seed, work_dir=work, plugin_factory=lambda kind, name, params: BandEncoder())


@pytest.fixture
def corpora(tmp_path):
    return write_corpus(tmp_path / "orig"), write_corpus(tmp_path / "anon", seed=1, shift=1.4)


@pytest.fixture
def make_context():
    return context


@pytest.fixture
def band_encoder():
    return BandEncoder


@pytest.fixture
def write_emotional_corpus():
    return write_corpus
