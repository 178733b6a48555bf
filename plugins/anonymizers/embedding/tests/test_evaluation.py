"""Embedding-space evaluation helpers against brute-force computations."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval_embedding_anonymizers.evaluation import eer, emotion_uar, pairwise_eer


def brute_force_eer(target, nontarget):
    best = None
    for t in np.unique(np.concatenate([target, nontarget, [np.inf]])):
        miss = np.mean(target < t)
        fa = np.mean(nontarget >= t)
        if best is None or abs(miss - fa) < best[0]:
            best = (abs(miss - fa), (miss + fa) / 2)
    return best[1]


def test_eer_matches_threshold_sweep():
    rng = np.random.default_rng(0)
    for _ in range(20):
        target = rng.normal(1, 1, rng.integers(5, 60))
        nontarget = rng.normal(0, 1, rng.integers(5, 60))
        assert abs(eer(target, nontarget) - brute_force_eer(target, nontarget)) < 1.0 / min(len(target), len(nontarget))
    assert eer(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 0.0
    assert eer(np.array([0.0, 1.0]), np.array([2.0, 3.0])) == 1.0


def test_pairwise_eer_separable_and_random():
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(5, 16))
    speakers = np.repeat(np.arange(5), 4)
    x = centres[speakers] * 5 + rng.normal(size=(20, 16))
    assert pairwise_eer(x, x, speakers) == 0.0
    assert 0.2 < pairwise_eer(x, rng.normal(size=(20, 16)), speakers) < 0.8


def test_uar_high_when_separable_and_chance_when_not():
    rng = np.random.default_rng(2)
    labels = np.repeat(np.array(["a", "b", "c", "d"]), 50)
    x = rng.normal(size=(200, 8))
    assert emotion_uar(x, labels)[1] < 0.5
    x[:, :4] += np.eye(4)[np.searchsorted(["a", "b", "c", "d"], labels)] * 6
    assert emotion_uar(x, labels)[1] > 0.9


def test_speaker_split_holds_out_whole_speakers():
    from vpeval_embedding_anonymizers.evaluation import split_rows

    speakers = np.repeat([f"s{i}" for i in range(20)], 10)
    emotions = np.tile(["happy", "sad"], 100)
    for seed in range(5):
        train, dev = split_rows(emotions, speakers, seed)
        assert not set(speakers[train]) & set(speakers[dev]) and len(train) + len(dev) == 200
        assert 0.1 < len(dev) / 200 < 0.2
    train, dev = split_rows(emotions, None, 0)
    assert set(speakers[train]) & set(speakers[dev])  # the paper's random split shares speakers
    with pytest.raises(ValueError, match="3 speakers"):
        split_rows(emotions[:20], speakers[:20], 0)


def test_speaker_split_finds_no_emotion_where_only_speakers_carry_it():
    # Each speaker speaks one emotion only: a random split learns it from the speaker's other
    # utterances, a speaker-disjoint split cannot.
    rng = np.random.default_rng(0)
    speakers = np.repeat(np.arange(24), 10)
    emotions = np.array(["happy", "sad"])[speakers % 2]
    vectors = rng.normal(size=(24, 16))[speakers] * 3 + rng.normal(size=(240, 16))
    _, by_utterance = emotion_uar(vectors, emotions, seed=0)
    by_speaker = np.mean([emotion_uar(vectors, emotions, seed=s, speakers=speakers)[1] for s in range(4)])
    assert by_utterance > 0.9 and by_speaker < 0.75
