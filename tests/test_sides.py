"""vpeval.sides: a trial side's vector is the mean of its utterances' vectors, each distinct utterance
looked up once; checked against a per-side numpy mean on random vectors with repeats across sides."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.errors import DataError
from vpeval.sides import distinct_utterances, require_utterances, side_means, utterance_key
from vpeval.types import Utterance


def utterance(name: str, channel: int | None = None) -> Utterance:
    return Utterance(id=name, speaker="s", path=f"/data/{name}.wav", channel=channel)


def test_side_means_equal_each_sides_own_mean_with_repeated_utterances():
    rng = np.random.default_rng(3)
    pool = [utterance(f"u{i}") for i in range(7)] + [utterance("u0", channel=1)]
    sides = [[pool[j] for j in rng.integers(0, len(pool), size=rng.integers(1, 6))] for _ in range(40)]
    truth = {utterance_key(u): rng.standard_normal(5).astype(np.float32) for u in pool}
    distinct = distinct_utterances(sides)
    assert len({utterance_key(u) for u in distinct}) == len(distinct)
    vectors = np.stack([truth[utterance_key(u)] for u in distinct])
    got = side_means(sides, distinct, vectors)
    want = np.stack([np.mean([truth[utterance_key(u)] for u in side], axis=0) for side in sides])
    assert got.dtype == np.float64 and np.array_equal(got, want.astype(np.float64))  # float32 mean kept
    wide = side_means(sides, distinct, vectors, accumulate=np.float64)
    want64 = np.stack([np.mean([truth[utterance_key(u)].astype(np.float64) for u in side], axis=0) for side in sides])
    assert np.array_equal(wide, want64)


def test_distinct_utterances_keep_first_seen_order():
    a, b, c = utterance("a"), utterance("b"), utterance("c")
    b_again = utterance("b")
    assert distinct_utterances([[b, a], [b_again, c, a]]) == [b, a, c]
    assert distinct_utterances([[a], [utterance("a", channel=2)]]) == [a, utterance("a", channel=2)]


def test_a_side_without_utterances_is_one_sentence_naming_the_attacker():
    with pytest.raises(DataError, match=r"^A trial side given to the ecapa attacker has no utterances; check"):
        require_utterances([[utterance("a")], []], "ecapa")
