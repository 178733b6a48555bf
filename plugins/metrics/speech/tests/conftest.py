"""Shared helpers for the speech-metric tests: a scripted ASR and synthetic emotional speech."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import soundfile as sf

from vpeval.api import ASR, PluginContext, Transcript
from vpeval.types import Corpus, Utterance


def audio_key(audio: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(audio, dtype=np.float32).tobytes()).hexdigest()


class ScriptedASR(ASR):
    """Returns a preset text per waveform and counts calls (to check the transcript cache)."""

    name = "scripted"

    def __init__(self, texts_by_audio: dict[str, str]):
        super().__init__()
        self.texts_by_audio = texts_by_audio
        self.calls = 0

    def transcribe(self, audio: np.ndarray) -> Transcript:
        self.calls += 1
        return Transcript(self.texts_by_audio[audio_key(audio)])


def context_with(tmp_path: Path, asr: ASR | None = None) -> PluginContext:
    factory = None if asr is None else (lambda kind, name, params: asr)
    return PluginContext(seed=3, work_dir=tmp_path / "work", plugin_factory=factory)


EMOTION_STYLE = {
    # pitch factor, pitch slope over the utterance (octaves), level, harmonic tilt, speaking-rate factor
    "neutral": (1.00, 0.00, 0.20, 0.80, 1.0),
    "happy": (1.30, 0.40, 0.40, 0.88, 1.3),
    "sad": (0.85, -0.30, 0.08, 0.65, 0.6),
    "angry": (1.20, -0.10, 0.70, 0.95, 1.5),
}


def emotional_speech(base_f0: float, emotion: str, rng: np.random.Generator, rate: int = 16000) -> np.ndarray:
    """Syllable-like harmonic bursts whose pitch, contour, level, brightness and tempo follow the emotion."""
    factor, slope, level, tilt, tempo = EMOTION_STYLE[emotion]
    seconds = rng.uniform(0.9, 1.2)
    t = np.arange(int(seconds * rate)) / rate
    f0 = base_f0 * factor * rng.uniform(0.95, 1.05) * 2 ** (slope * t / seconds)
    phase = 2 * np.pi * np.cumsum(f0) / rate
    voice = sum(tilt**k * np.sin(k * phase) for k in range(1, 16))
    syllables = 0.5 - 0.5 * np.cos(2 * np.pi * 3.0 * tempo * t)  # voiced bursts at a syllable rate
    audio = level * rng.uniform(0.85, 1.15) * voice / 6 * syllables + rng.normal(0, 0.002, t.size)
    return audio.astype(np.float32)


def emotional_corpus(folder: Path, speakers: int = 6, per_emotion: int = 2, seed: int = 0) -> Corpus:
    folder.mkdir(parents=True, exist_ok=True)
    utterances = []
    for s in range(speakers):
        base_f0 = 110.0 if s % 2 else 200.0
        base_f0 *= np.random.default_rng([seed, s]).uniform(0.85, 1.15)
        for e, emotion in enumerate(EMOTION_STYLE):
            for k in range(per_emotion):
                rng = np.random.default_rng([seed, s, e, k])
                uid = f"s{s}-{emotion}-{k}"
                path = folder / f"{uid}.wav"
                sf.write(path, emotional_speech(base_f0, emotion, rng), 16000)
                utterances.append(Utterance(uid, f"s{s}", str(path), gender="m" if s % 2 else "f", emotion=emotion))
    return Corpus("emotional", utterances)


# Test modules are imported with --import-mode=importlib, so they reach these helpers through fixtures.
import pytest  # noqa: E402


@pytest.fixture
def scripted_asr():
    return ScriptedASR


@pytest.fixture
def make_context():
    return context_with


@pytest.fixture
def make_emotional_corpus():
    return emotional_corpus


@pytest.fixture
def key_of_audio():
    return audio_key
