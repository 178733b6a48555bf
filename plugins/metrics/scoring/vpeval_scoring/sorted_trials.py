"""Scores sorted once with tied values grouped: the form every threshold metric works on.

Sorting is the only O(n log n) step. The EER, minDCF, PAV and every bootstrap replicate then work on
`Tally`s, per-value target and non-target counts, with cumulative sums.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tally:
    """Target and non-target counts (or weight sums) per distinct score, ascending by score."""

    values: np.ndarray  # distinct scores [U]
    tar: np.ndarray  # int64 when unweighted (exact tie-breaking), else float64
    non: np.ndarray
    # PAV fits of this tally, memoised by vpeval_scoring.pav.pav_blocks: the ROCCH-EER, min Cllr and
    # ZEBRA share them. Only the slot lives here, so this module does not depend on pav.py.
    fits: dict[bool, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def n_tar(self):
        return self.tar.sum()

    @property
    def n_non(self):
        return self.non.sum()

    def nonempty(self) -> Tally:
        """Without the scores that carry no weight (trials a bootstrap replicate did not draw)."""
        keep = (self.tar + self.non) > 0
        if keep.all():
            return self
        return Tally(self.values[keep], self.tar[keep], self.non[keep])


class SortedTrials:
    """One verification trial set, sorted by score when a metric first needs it."""

    def __init__(self, scores: np.ndarray, targets: np.ndarray):
        self.scores = np.asarray(scores, dtype=np.float64)
        self.targets = np.asarray(targets, dtype=bool)
        if self.scores.shape != self.targets.shape or self.scores.ndim != 1:
            raise ValueError("scores and targets must be 1-d arrays of the same length")
        # Per-trial arrays a metric derives once and reuses across bootstrap replicates.
        self.cache: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.scores)

    @property
    def n_target(self) -> int:
        return int(np.count_nonzero(self.targets))

    @cached_property
    def order(self) -> np.ndarray:
        """argsort of the scores: only weighted tallies (the bootstrap) and per_trial need it."""
        return np.argsort(self.scores)

    @cached_property
    def _starts(self) -> np.ndarray:
        """Where each distinct score begins in the sorted scores."""
        ranked = self.scores[self.order]
        is_start = np.empty(len(ranked), dtype=bool)
        is_start[:1] = True
        np.not_equal(ranked[1:], ranked[:-1], out=is_start[1:])
        return np.flatnonzero(is_start)

    @cached_property
    def _sorted_targets(self) -> np.ndarray:
        return self.targets[self.order]

    @cached_property
    def counts(self) -> Tally:
        """The unweighted tally, from two plain sorts (all scores, target scores) and a merge by
        searchsorted: no argsort and no gathers, which makes it about twice as fast as `order`."""
        ranked = np.sort(self.scores)
        is_start = np.empty(len(ranked), dtype=bool)
        is_start[:1] = True
        np.not_equal(ranked[1:], ranked[:-1], out=is_start[1:])
        starts = np.flatnonzero(is_start)
        values = ranked if len(starts) == len(ranked) else ranked[starts]
        cum_tar = np.searchsorted(np.sort(self.scores[self.targets]), values, side="right")
        tar = np.diff(cum_tar, prepend=0).astype(np.int64)
        total = np.diff(np.append(starts, len(ranked))).astype(np.int64)
        return Tally(values, tar, total - tar)

    def tally(self, weights: np.ndarray | None = None) -> Tally:
        """Counts per distinct score; with weights (in the trials' original order), weighted sums."""
        if weights is None:
            return self.counts
        total = np.asarray(weights, dtype=np.float64)[self.order]
        tar = np.where(self._sorted_targets, total, 0.0)
        starts = self._starts
        if len(starts) < len(total):  # continuous scores rarely tie: skip the grouping then
            tar = np.add.reduceat(tar, starts)
            total = np.add.reduceat(total, starts)
        return Tally(self.counts.values, tar, total - tar)

    def per_trial(self, group_values: np.ndarray) -> np.ndarray:
        """Spread one value per distinct score back onto the trials, in their original order."""
        sizes = np.diff(np.append(self._starts, len(self.scores)))
        out = np.empty(len(self.scores), dtype=np.asarray(group_values).dtype)
        out[self.order] = np.repeat(group_values, sizes)
        return out


_RECENT: OrderedDict[bytes, SortedTrials] = OrderedDict()
_KEEP = 8


def sorted_trials(scores: np.ndarray, targets: np.ndarray) -> SortedTrials:
    """SortedTrials.build, remembered for the last few score sets: several metrics on the same scores
    (the usual case) then sort them once. Keyed by content, so changed arrays are never served stale."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    targets = np.ascontiguousarray(targets, dtype=bool)
    key = hashlib.blake2b(scores.tobytes(), digest_size=16)
    key.update(targets.tobytes())
    digest = key.digest()
    hit = _RECENT.get(digest)
    if hit is not None:
        _RECENT.move_to_end(digest)
        return hit
    built = SortedTrials(scores, targets)
    _RECENT[digest] = built
    while len(_RECENT) > _KEEP:
        _RECENT.popitem(last=False)
    return built
