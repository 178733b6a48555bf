"""Utterance prosody of seed 000 (III-A3): [F0 mean, speaking rate, voiced ratio].

F0 and voicing from Praat's pitch track (parselmouth); speaking rate = syllables / T, with syllables
from CMUdict (the `pronouncing` package) and T the span from the first to the last word timestamp.
Words CMUdict does not know are counted by vowel groups. Without word timings (reference
transcripts), T is the span from the first to the last voiced pitch frame.
"""

from __future__ import annotations

import re

import numpy as np

from vpeval_multiutt.transcripts import Words

FEATURE_NAMES = ("f0_mean_hz", "speaking_rate_syllables_per_s", "voiced_ratio")
PITCH_FLOOR, PITCH_CEILING = 75.0, 600.0  # Praat's defaults
TIME_STEP = 0.01
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


def syllables(word: str) -> int:
    """Syllables of one word: CMUdict's first pronunciation, else vowel groups (at least one)."""
    import pronouncing

    clean = re.sub(r"[^a-z']", "", word.lower())
    if not clean:
        return 0
    phones = pronouncing.phones_for_word(clean)
    if phones:
        return pronouncing.syllable_count(phones[0])
    return max(1, len(_VOWEL_GROUPS.findall(clean)))


def pitch_track(audio: np.ndarray, rate: int) -> np.ndarray:
    """F0 per 10 ms frame, 0 where unvoiced (Praat's autocorrelation pitch)."""
    import parselmouth

    x = np.asarray(audio, dtype=np.float64)
    if len(x) < rate // 5:  # Praat needs a few pitch periods
        x = np.pad(x, (0, rate // 5 - len(x)))
    sound = parselmouth.Sound(x, sampling_frequency=float(rate))
    return sound.to_pitch(time_step=TIME_STEP, pitch_floor=PITCH_FLOOR, pitch_ceiling=PITCH_CEILING).selected_array[
        "frequency"
    ]


def utterance_prosody(audio: np.ndarray, rate: int, words: Words) -> np.ndarray:
    """[F0 mean (Hz, voiced frames), syllables per second, voiced frames / all pitch frames]."""
    f0 = pitch_track(audio, rate)
    voiced = f0 > 0
    f0_mean = float(f0[voiced].mean()) if voiced.any() else 0.0
    voiced_ratio = float(voiced.mean()) if len(f0) else 0.0
    if words.words:
        count = sum(syllables(w) for w, _, _ in words.words)
        span = words.words[-1][2] - words.words[0][1]
    else:
        count = sum(syllables(w) for w in words.text.split())
        where = np.flatnonzero(voiced)
        span = (where[-1] - where[0] + 1) * TIME_STEP if where.size else 0.0
    rate_sps = count / span if span > 0 else 0.0
    return np.array([f0_mean, rate_sps, voiced_ratio], dtype=np.float32)


def side_statistics(features: np.ndarray) -> np.ndarray:
    """Mean and standard deviation over the N utterances of a side: [N, 3] -> [6] (III-B3)."""
    return np.concatenate([features.mean(axis=0), features.std(axis=0)]).astype(np.float32)
