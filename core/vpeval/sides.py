"""Trial sides as embedding attackers represent them: each side (the utterances one trial compares on one
side) is the mean of its utterances' vectors, and each distinct utterance is computed once however many
sides hold it (at VoicePrivacy size the sides hold several times more utterances than there are distinct
ones: BENCHMARKS.md "Scale", the score stage)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

from vpeval.errors import DataError
from vpeval.types import Utterance
from vpeval.vector_table import VectorTable

UtteranceKey = tuple[str, int | None]


def utterance_key(utterance: Utterance) -> UtteranceKey:
    """One utterance's identity among the sides: its file and channel."""
    return (utterance.path, utterance.channel)


def require_utterances(sides: Iterable[Sequence[Utterance]], attacker: str) -> None:
    """A side with no utterances has no mean: one sentence naming the attacker."""
    for side in sides:
        if len(side) == 0:
            raise DataError(f"A trial side given to the {attacker} attacker has no utterances; check the trial list.")


def distinct_utterances(sides: Iterable[Sequence[Utterance]]) -> list[Utterance]:
    """Each utterance of the sides once, in the order first seen."""
    return _layout(sides)[0]


def side_means(
    sides: Sequence[Sequence[Utterance]],
    distinct: Sequence[Utterance],
    vectors: np.ndarray,
    accumulate: type | None = None,
) -> np.ndarray:
    """[S, D] float64: each side's mean over its utterances' rows of `vectors` (row i is distinct[i]'s).

    The mean is taken in `accumulate` (default: the vectors' own dtype), so an attacker that averaged
    float32 vectors in float32 keeps its numbers."""
    found, rows, lengths = _layout(sides)
    given = {utterance_key(u): i for i, u in enumerate(distinct)}
    to_given = np.fromiter((given[utterance_key(u)] for u in found), dtype=np.int64, count=len(found))
    return _means(to_given[rows], lengths, vectors, accumulate)


def side_means_by(
    sides: Sequence[Sequence[Utterance]],
    vectors_of: Callable[[list[Utterance]], np.ndarray],
    accumulate: type | None = None,
) -> np.ndarray:
    """side_means over `vectors_of(distinct utterances)`, the sides' layout found once."""
    distinct, rows, lengths = _layout(sides)
    return _means(rows, lengths, vectors_of(distinct), accumulate)


def remembered_side_means(
    sides: Sequence[Sequence[Utterance]],
    remembered: VectorTable,
    embed: Callable[[list[Utterance]], np.ndarray | Sequence[np.ndarray]],
    accumulate: type | None = None,
) -> np.ndarray:
    """[S, D] float64 side means, as side_means, over vectors that `remembered` keeps by utterance key: `embed`
    is called once, with the distinct utterances it lacks, and its vectors are kept for later calls."""

    def vectors_of(distinct: list[Utterance]) -> np.ndarray:
        keys = [utterance_key(u) for u in distinct]
        todo = [(u, key) for u, key in zip(distinct, keys) if key not in remembered]
        if todo:
            remembered.add([key for _, key in todo], embed([u for u, _ in todo]))
        return remembered.take(keys)

    return side_means_by(sides, vectors_of, accumulate)


def _layout(sides: Iterable[Sequence[Utterance]]) -> tuple[list[Utterance], np.ndarray, np.ndarray]:
    """The distinct utterances (first seen first), each side-utterance's row among them, each side's length.

    An utterance object met again is found by its identity before its key: the objects stay alive in
    `sides` for the call, and an int look-up touches neither the object nor its path string, which at
    VoicePrivacy size lie scattered beyond the CPU caches (BENCHMARKS.md "Scale", the score stage)."""
    by_object: dict[int, int] = {}
    by_key: dict[UtteranceKey, int] = {}
    distinct: list[Utterance] = []
    rows: list[int] = []
    lengths: list[int] = []
    for side in sides:
        lengths.append(len(side))
        for u in side:
            row = by_object.get(id(u))
            if row is None:
                key = utterance_key(u)
                row = by_key.get(key)
                if row is None:
                    row = by_key[key] = len(distinct)
                    distinct.append(u)
                by_object[id(u)] = row
            rows.append(row)
    return distinct, np.asarray(rows, dtype=np.int64), np.asarray(lengths, dtype=np.int64)


def _means(rows: np.ndarray, lengths: np.ndarray, vectors: np.ndarray, accumulate: type | None) -> np.ndarray:
    vectors = np.asarray(vectors)
    starts = np.cumsum(lengths) - lengths
    out = np.empty((len(lengths), vectors.shape[1]), dtype=np.float64)
    # the sides of one length at once, [k, L, D] averaged over L: the same sums in the same order as one
    # side at a time (numpy adds the rows of a non-last axis one after another), without a loop over sides
    for length in np.unique(lengths):
        which = np.flatnonzero(lengths == length)
        take = rows[(starts[which, None] + np.arange(length)).reshape(-1)]
        gathered = vectors[take]
        if accumulate is not None:
            gathered = gathered.astype(accumulate, copy=False)
        out[which] = gathered.reshape(len(which), int(length), -1).mean(axis=1)
    return out
