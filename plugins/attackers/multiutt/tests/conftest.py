"""A tiny corpus with speaker-specific word habits (idiolects), and held-out EER over N-utterance sides."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.stats import equal_error_rate
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus

TRAIN_SPEAKERS = 14
HELDOUT_SPEAKERS = 8
VOCABULARY = (
    "apple river stone cloud paper garden window yellow orange table seven music doctor silver basket planet "
    "forest candle bridge letter pocket summer winter button rabbit monkey pencil carpet ladder engine"
).split()


def with_idiolects(corpus: Corpus, favourites: int = 4, habit: float = 0.6, words: int = 6) -> Corpus:
    """Each speaker draws `favourites` words and uses them for `habit` of the words of each transcript."""
    utterances = []
    for index, (_, utts) in enumerate(corpus.by_speaker().items()):
        rng = np.random.default_rng([7, index])
        liked = rng.choice(len(VOCABULARY), favourites, replace=False)
        for u in utts:
            text = [
                VOCABULARY[liked[rng.integers(favourites)]]
                if rng.random() < habit
                else VOCABULARY[rng.integers(len(VOCABULARY))]
                for _ in range(words)
            ]
            utterances.append(u.replace(transcript=" ".join(text)))
    return Corpus(corpus.name, utterances, dict(corpus.speaker_gender), fingerprint=corpus.fingerprint + "-idiolects")


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Corpus:
    audio = make_corpus(
        tmp_path_factory.mktemp("multiutt-audio"),
        speakers=TRAIN_SPEAKERS + HELDOUT_SPEAKERS,
        utterances=8,
        seconds=1.0,
        seed=0,
    )
    return with_idiolects(audio)


@pytest.fixture(scope="session")
def train_corpus(corpus) -> Corpus:
    return corpus.with_speakers(corpus.speakers[:TRAIN_SPEAKERS])


@pytest.fixture(scope="session")
def heldout(corpus) -> Corpus:
    return corpus.with_speakers(corpus.speakers[TRAIN_SPEAKERS:])


def side_sets(corpus: Corpus, n: int) -> tuple[list[list], np.ndarray]:
    """Disjoint sides of n utterances per speaker, and the speaker of each."""
    sides, speakers = [], []
    for speaker, utts in corpus.by_speaker().items():
        for start in range(0, len(utts) - n + 1, n):
            sides.append(utts[start : start + n])
            speakers.append(speaker)
    return sides, np.array(speakers)


def heldout_eer(attacker, corpus: Corpus, n: int = 2) -> float:
    """EER of all pairs of n-utterance sides of speakers the attacker never trained on."""
    sides, speakers = side_sets(corpus, n)
    vectors = attacker.represent_many(sides)
    i, j = np.triu_indices(len(speakers), 1)
    scores = attacker.score(vectors[i], vectors[j])
    same = speakers[i] == speakers[j]
    return equal_error_rate(scores[same], scores[~same])


@pytest.fixture(scope="session")
def eer_of():
    """heldout_eer as a fixture (tests cannot import conftest under --import-mode=importlib)."""
    return heldout_eer
