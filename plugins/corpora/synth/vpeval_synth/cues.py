"""How much each identity cue says about the speaker in a corpus: EERs of three simple systems.

- MFCC statistics: mean and standard deviation of 20 MFCCs per utterance, standardized over the
  corpus, cosine scoring (what a naive spectral attacker sees).
- Transcript TF-IDF: word uni- and bigrams of the transcripts, cosine (what word habits give away).
- Prosody: mean log F0, F0 spread (semitones) and speaking rate (words per second of speech),
  standardized, negative Euclidean distance.

Single-utterance trials are every pair of utterances; set trials are every pair of disjoint sets of
N consecutive utterances per speaker (a set is represented by the mean vector, or for text by the
concatenated transcripts). Non-target pairs are same-gender only, as in VoicePrivacy trials.
Needs the `cues` extra (scikit-learn, librosa, praat-parselmouth).
"""

from __future__ import annotations

import numpy as np

from vpeval.stats import eer
from vpeval.types import Corpus


def read(path: str, sample_rate: int = 16000) -> np.ndarray:
    import soundfile as sf
    import soxr

    audio, rate = sf.read(path, dtype="float32", always_2d=True)
    audio = audio.mean(axis=1)
    return audio if rate == sample_rate else soxr.resample(audio, rate, sample_rate)


def mfcc_statistics(audio: np.ndarray, sample_rate: int = 16000) -> np.ndarray:
    import librosa

    mfcc = librosa.feature.mfcc(y=audio, sr=sample_rate, n_mfcc=20, n_fft=400, hop_length=160, n_mels=40)
    return np.concatenate([mfcc.mean(axis=1), mfcc.std(axis=1)])


def pitch_track(audio: np.ndarray, sample_rate: int = 16000) -> np.ndarray:
    """Voiced F0 values in Hz (Praat's autocorrelation tracker through parselmouth)."""
    import parselmouth

    pitch = parselmouth.Sound(audio.astype(np.float64), sample_rate).to_pitch(pitch_floor=60, pitch_ceiling=450)
    f0 = pitch.selected_array["frequency"]
    return f0[f0 > 0]


def prosody(audio: np.ndarray, transcript: str, sample_rate: int = 16000) -> np.ndarray:
    f0 = pitch_track(audio, sample_rate)
    semitones = 12 * np.log2(f0 / 100.0) if len(f0) else np.zeros(1)
    envelope = np.abs(audio)
    loud = np.flatnonzero(envelope > 0.1 * envelope.max())
    seconds = (loud[-1] - loud[0]) / sample_rate if len(loud) > 1 else len(audio) / sample_rate
    return np.array([np.median(semitones), np.std(semitones), len(transcript.split()) / max(seconds, 0.1)])


def _standardize(x: np.ndarray) -> np.ndarray:
    return (x - x.mean(axis=0)) / np.maximum(x.std(axis=0), 1e-9)


def _cosine_matrix(x: np.ndarray) -> np.ndarray:
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return x @ x.T


def _distance_matrix(x: np.ndarray) -> np.ndarray:
    return -np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)


def _pair_eer(similarity: np.ndarray, speakers: np.ndarray, genders: np.ndarray) -> float:
    upper = np.triu(np.ones_like(similarity, dtype=bool), k=1)
    same = speakers[:, None] == speakers[None, :]
    same_gender = genders[:, None] == genders[None, :]
    keep = upper & same_gender
    return eer(similarity[keep], same[keep])


def _sets(corpus: Corpus, n: int) -> list[list[int]]:
    """Disjoint sets of n consecutive utterances per speaker, as row indices into the corpus."""
    index = {u.id: i for i, u in enumerate(corpus.utterances)}
    sets = []
    for utts in corpus.by_speaker().values():
        rows = [index[u.id] for u in utts]
        sets += [rows[k : k + n] for k in range(0, len(rows) - n + 1, n)]
    return sets


def measure_cues(corpus: Corpus, set_size: int = 5) -> list[dict]:
    """EER of each cue on single utterances and on sets of `set_size`, as table rows."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    utterances = corpus.utterances
    speakers = np.array([u.speaker for u in utterances])
    genders = np.array([u.gender or "" for u in utterances])
    audio = [read(u.path) for u in utterances]
    mfcc = _standardize(np.stack([mfcc_statistics(a) for a in audio]))
    pros = np.stack([prosody(a, u.transcript or "") for a, u in zip(audio, utterances)])
    pros = _standardize(pros)
    texts = [u.transcript or "" for u in utterances]

    def text_similarity(documents: list[str]) -> np.ndarray:
        vectors = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(documents)
        return (vectors @ vectors.T).toarray()

    sets = _sets(corpus, set_size)
    set_speakers = np.array([speakers[s[0]] for s in sets])
    set_genders = np.array([genders[s[0]] for s in sets])
    set_texts = [" ".join(texts[i] for i in s) for s in sets]
    set_mean = lambda x: np.stack([x[s].mean(axis=0) for s in sets])  # noqa: E731
    one, many = "1 utterance", f"sets of {set_size}"
    return [
        {"cue": "MFCC statistics (cosine)", "trials": one, "eer": _pair_eer(_cosine_matrix(mfcc), speakers, genders)},
        {
            "cue": "MFCC statistics (cosine)",
            "trials": many,
            "eer": _pair_eer(_cosine_matrix(set_mean(mfcc)), set_speakers, set_genders),
        },
        {
            "cue": "transcript TF-IDF (cosine)",
            "trials": one,
            "eer": _pair_eer(text_similarity(texts), speakers, genders),
        },
        {
            "cue": "transcript TF-IDF (cosine)",
            "trials": many,
            "eer": _pair_eer(text_similarity(set_texts), set_speakers, set_genders),
        },
        {
            "cue": "prosody: F0 mean, F0 spread, rate (distance)",
            "trials": one,
            "eer": _pair_eer(_distance_matrix(pros), speakers, genders),
        },
        {
            "cue": "prosody: F0 mean, F0 spread, rate (distance)",
            "trials": many,
            "eer": _pair_eer(_distance_matrix(set_mean(pros)), set_speakers, set_genders),
        },
    ]
