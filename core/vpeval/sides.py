"""Trial sides as embedding attackers represent them: each side (the utterances one trial compares on one
side) is the mean of its utterances' vectors, and each distinct utterance is computed once however many
sides hold it (at VoicePrivacy size the sides hold several times more utterances than there are distinct
ones: BENCHMARKS.md "Scale", the score stage)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from vpeval.errors import DataError
from vpeval.types import Utterance

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
    found: dict[UtteranceKey, Utterance] = {}
    for side in sides:
        for utterance in side:
            found.setdefault(utterance_key(utterance), utterance)
    return list(found.values())


def side_means(
    sides: Sequence[Sequence[Utterance]],
    distinct: Sequence[Utterance],
    vectors: np.ndarray,
    accumulate: type | None = None,
) -> np.ndarray:
    """[S, D] float64: each side's mean over its utterances' rows of `vectors` (row i is distinct[i]'s).

    The mean is taken in `accumulate` (default: the vectors' own dtype), so an attacker that averaged
    float32 vectors in float32 keeps its numbers."""
    row = {utterance_key(u): i for i, u in enumerate(distinct)}
    lengths = np.fromiter((len(side) for side in sides), dtype=np.int64, count=len(sides))
    rows = np.fromiter(
        (row[utterance_key(u)] for side in sides for u in side), dtype=np.int64, count=int(lengths.sum())
    )
    starts = np.cumsum(lengths) - lengths
    out = np.empty((len(sides), vectors.shape[1]), dtype=np.float64)
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
