"""Tiny fake speech for tests: harmonic 'vowels' with a speaker-specific pitch and formants.

Deterministic from the seed, written as real wav files so the whole audio path is exercised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import lfilter

from vpeval.keys import stable_int
from vpeval.types import Corpus, Utterance

EMOTIONS = ("neutral", "happy", "sad", "angry")
WORDS = ("red", "green", "blue", "seven", "river", "paper", "window", "yellow", "orange", "table")


def speaker_voice(speaker_index: int, seed: int = 0) -> dict:
    """Pitch and formant settings of fake speaker `speaker_index` (even: female, odd: male)."""
    rng = np.random.default_rng([seed, speaker_index, 7])
    female = speaker_index % 2 == 0
    return {
        "gender": "f" if female else "m",
        "f0": float(rng.uniform(180, 260) if female else rng.uniform(90, 150)),
        "formant_scale": float(rng.uniform(1.05, 1.25) if female else rng.uniform(0.85, 1.02)),
        "tilt": float(rng.uniform(0.85, 0.97)),
    }


def synthesize(voice: dict, seconds: float, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """A sequence of voiced segments with jittered pitch through three formant resonators."""
    n = int(seconds * sample_rate)
    out = np.zeros(n, dtype=np.float64)
    seg = int(0.25 * sample_rate)
    base_formants = np.array([[700, 1200, 2600], [300, 2300, 3000], [500, 900, 2500], [400, 1900, 2550]])
    for start in range(0, n, seg):
        length = min(seg, n - start)
        f0 = voice["f0"] * rng.uniform(0.9, 1.1)
        t = np.arange(length) / sample_rate
        phase = 2 * np.pi * f0 * t
        source = sum((voice["tilt"] ** k) * np.sin(k * phase) for k in range(1, 25))
        formants = base_formants[rng.integers(len(base_formants))] * voice["formant_scale"]
        sig = source
        for f in formants:
            if f >= sample_rate / 2 - 100:
                continue
            r = 0.97
            theta = 2 * np.pi * f / sample_rate
            sig = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], sig)
        ramp = np.minimum(1, np.minimum(np.arange(length), length - np.arange(length)) / (0.02 * sample_rate))
        out[start : start + length] = sig * ramp
    out += rng.normal(0, 0.003, n)
    out /= max(1e-9, np.abs(out).max())
    return (0.5 * out).astype(np.float32)


def make_corpus(
    folder: str | Path,
    speakers: int = 4,
    utterances: int = 3,
    sample_rate: int = 16000,
    seconds: float = 1.0,
    seed: int = 0,
    name: str = "dummy",
) -> Corpus:
    """Write `speakers` x `utterances` wav files under `folder` and return their Corpus.

    Speakers alternate f/m; utterances cycle through four emotion labels and get a transcript.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    utts = []
    for s in range(speakers):
        voice = speaker_voice(s, seed)
        spk = f"spk{s:03d}"
        for u in range(utterances):
            rng = np.random.default_rng([seed, s, u])
            audio = synthesize(voice, seconds * rng.uniform(0.8, 1.2), sample_rate, rng)
            uid = f"{spk}-u{u:03d}"
            path = folder / f"{uid}.wav"
            sf.write(path, audio, sample_rate, subtype="PCM_16")
            words = [WORDS[(stable_int(seed, s, u, k)) % len(WORDS)] for k in range(4)]
            utts.append(
                Utterance(
                    id=uid,
                    speaker=spk,
                    path=str(path),
                    gender=voice["gender"],
                    transcript=" ".join(words),
                    emotion=EMOTIONS[u % len(EMOTIONS)],
                    session=f"s{u % 2}",
                    sample_rate=sample_rate,
                    duration=len(audio) / sample_rate,
                )
            )
    return Corpus(name=name, utterances=utts, fingerprint=f"{name}-{seed}-{speakers}-{utterances}-{sample_rate}")


def seeded_voice(key: str, level: str = "utterance", seed: int = 0, utterance=None):
    """The Voice an anonymizer test hands over: its generator fixed by `seed` and the key."""
    from vpeval.api import PluginContext, Voice

    return Voice(key, level, PluginContext(seed=seed).rng("voice", key), utterance)


def write_pool_manifest(folder: Path, speakers: int = 4, seconds: float = 1.5) -> str:
    """A dummy pool (2 utterances per speaker, seed 123) as a manifest CSV, its speaker ids prefixed "pool-"
    so they never meet a test corpus's; returns the manifest's path."""
    import csv

    corpus = make_corpus(folder, speakers, utterances=2, seconds=seconds, seed=123, name="pool")
    with open(Path(folder) / "pool.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender", "transcript", "emotion"])
        writer.writerows([u.path, "pool-" + u.speaker, u.gender, u.transcript, u.emotion] for u in corpus.utterances)
    return str(Path(folder) / "pool.csv")
