"""The rank of the true speaker among an enrolled population, from an utterance-by-utterance score matrix.

Rows of the matrix are enrollment utterances, columns test utterances (probes). A speaker's score for a
probe pools the scores of that speaker's enrollment utterances (mean, or max); an enrollment utterance
scored against itself is left out. A probe whose speaker has no enrollment utterance cannot be
identified in a closed set: it is left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SpeakerScores:
    """Probe-by-speaker scores of a closed-set identification."""

    scores: np.ndarray  # float64 [P, S]: probe p against enrolled speaker s
    true: np.ndarray  # int [P]: column of each probe's own speaker
    probe_speakers: np.ndarray  # str [P]
    population: np.ndarray  # str [S]: the enrolled speakers, sorted
    left_out: int  # probes whose speaker is not enrolled


def speaker_scores(
    scores: np.ndarray,
    row_speakers: np.ndarray,
    col_speakers: np.ndarray,
    row_ids: np.ndarray | None = None,
    col_ids: np.ndarray | None = None,
    pooling: str = "mean",
) -> SpeakerScores:
    """Pool utterance scores [R, C] into probe-by-speaker scores [P, S] (see the module docstring)."""
    scores = np.asarray(scores, dtype=np.float64)
    rows = np.asarray(row_speakers).astype(str)
    cols = np.asarray(col_speakers).astype(str)
    population, row_index = np.unique(rows, return_inverse=True)
    usable = np.ones(scores.shape, dtype=bool)
    if row_ids is not None and col_ids is not None:
        usable = np.asarray(row_ids).astype(str)[:, None] != np.asarray(col_ids).astype(str)[None, :]
    enrolled = np.isin(cols, population)
    scores, usable, cols = scores[:, enrolled], usable[:, enrolled], cols[enrolled]
    if pooling == "mean":
        member = np.zeros((len(population), len(rows)))
        member[row_index, np.arange(len(rows))] = 1.0
        total = member @ np.where(usable, scores, 0.0)
        count = member @ usable.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            pooled = total / count
    elif pooling == "max":
        masked = np.where(usable, scores, -np.inf)
        pooled = np.stack([masked[row_index == s].max(axis=0) for s in range(len(population))])
    else:
        raise ValueError(f"unknown pooling {pooling!r}: mean or max")
    # A speaker with no usable enrollment utterance for this probe cannot be ranked above anyone.
    pooled = np.where(np.isfinite(pooled), pooled, -np.inf).T
    return SpeakerScores(
        scores=pooled,
        true=np.searchsorted(population, cols),
        probe_speakers=cols,
        population=population,
        left_out=int((~enrolled).sum()),
    )


def true_ranks(scores: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Rank (1 = best) of each probe's true speaker: 1 + the number of other speakers scoring at least as
    high, so a tie counts against the attacker (a tie does not identify anyone)."""
    own = scores[np.arange(len(true)), true]
    return (scores >= own[:, None]).sum(axis=1).astype(np.int64)
