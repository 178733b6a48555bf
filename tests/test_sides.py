"""vpeval.sides: a trial side's vector is the mean of its utterances' vectors, each distinct utterance
looked up once; checked against a per-side numpy mean on random vectors with repeats across sides."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.errors import DataError
from vpeval.sides import (
    distinct_utterances,
    remembered_side_means,
    require_utterances,
    side_means,
    side_means_by,
    utterance_key,
)
from vpeval.types import Utterance
from vpeval.vector_table import VectorTable


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


def test_side_means_read_rows_by_key_whatever_the_order_of_the_distinct_utterances():
    rng = np.random.default_rng(5)
    pool = [utterance(f"u{i}") for i in range(9)]
    # equal utterances as other objects: found by key, not by identity
    sides = [
        [pool[j] if rng.random() < 0.5 else utterance(f"u{j}") for j in rng.integers(0, 9, size=3)] for _ in range(25)
    ]
    truth = {utterance_key(u): rng.standard_normal(4) for u in pool}
    distinct = distinct_utterances(sides)
    shuffled = [distinct[i] for i in rng.permutation(len(distinct))]
    got = side_means(sides, shuffled, np.stack([truth[utterance_key(u)] for u in shuffled]))
    want = np.stack([np.mean([truth[utterance_key(u)] for u in side], axis=0) for side in sides])
    assert np.array_equal(got, want)
    assert len(distinct) == len({utterance_key(u) for u in distinct})


def test_remembered_side_means_embed_only_what_the_table_lacks_once():
    rng = np.random.default_rng(6)
    pool = [utterance(f"u{i}") for i in range(12)]
    truth = {utterance_key(u): rng.standard_normal(3).astype(np.float32) for u in pool}
    calls: list[list[str]] = []

    def embed(todo):
        calls.append([u.id for u in todo])
        return np.stack([truth[utterance_key(u)] for u in todo])

    remembered = VectorTable()
    first = [[pool[0], pool[1]], [pool[1], pool[2]], [pool[0]]]
    second = [[pool[2], pool[3]], [utterance("u3"), pool[0]]]
    for sides in (first, second, second):
        got = remembered_side_means(sides, remembered, embed, accumulate=np.float64)
        want = np.stack([np.mean([truth[utterance_key(u)].astype(np.float64) for u in s], axis=0) for s in sides])
        assert np.array_equal(got, want)
        assert np.array_equal(
            side_means_by(sides, lambda d: np.stack([truth[utterance_key(u)] for u in d])),
            side_means(
                sides,
                distinct_utterances(sides),
                np.stack([truth[utterance_key(u)] for u in distinct_utterances(sides)]),
            ),
        )
    assert calls == [["u0", "u1", "u2"], ["u3"]]
