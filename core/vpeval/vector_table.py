"""Vectors remembered by key in one contiguous array, so that gathering many of them is one indexed copy.

At VoicePrivacy size a run remembers tens of thousands of trial sides' and utterances' vectors. Kept as
one small array each in a dictionary, every gather visits them one Python object at a time, scattered over
the heap, and its cost per vector grew with the corpus (BENCHMARKS.md "Scale", the score stage). Here a
gather is a dictionary look-up per key and one numpy take over a single block.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

import numpy as np


class VectorTable:
    """Rows of one shape and dtype, by key. Adding a key again replaces its row; one call's keys are distinct."""

    def __init__(self, dtype: type | np.dtype | None = None):
        self._dtype = None if dtype is None else np.dtype(dtype)
        self._row: dict[Hashable, int] = {}
        self._data: np.ndarray | None = None  # capacity >= len(self); rows past len(self) are unused

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._row

    @property
    def shape(self) -> tuple[int, ...] | None:
        """One row's shape, once a row has been added."""
        return None if self._data is None else self._data.shape[1:]

    def missing(self, keys: Iterable[Hashable]) -> list[Hashable]:
        """The keys not in the table, each once, in the order first seen."""
        return [key for key in dict.fromkeys(keys) if key not in self._row]

    def add(self, keys: Sequence[Hashable], vectors: np.ndarray | Sequence[np.ndarray]) -> None:
        """Row i of `vectors` becomes key i's."""
        vectors = np.asarray(vectors, dtype=self._dtype)
        if vectors.ndim == 0 or len(vectors) != len(keys):
            raise ValueError(f"{len(keys)} keys were given with {len(vectors) if vectors.ndim else 0} vectors")
        if not len(keys):
            return
        if len(dict.fromkeys(keys)) != len(keys):
            raise ValueError("a key was given twice in one call; give each key once")
        if self._data is None:
            self._data = np.empty((max(16, len(keys)), *vectors.shape[1:]), dtype=vectors.dtype)
        elif vectors.shape[1:] != self._data.shape[1:]:
            raise ValueError(f"rows of shape {vectors.shape[1:]} cannot join a table of rows {self._data.shape[1:]}")
        rows = np.empty(len(keys), dtype=np.int64)
        for i, key in enumerate(keys):
            row = self._row.get(key)
            if row is None:
                row = self._row[key] = len(self._row)
            rows[i] = row
        self._reserve(len(self._row))
        self._data[rows] = vectors

    def rows(self, keys: Sequence[Hashable]) -> np.ndarray:
        """The row numbers of these keys (KeyError for one not in the table)."""
        row = self._row
        return np.fromiter((row[key] for key in keys), dtype=np.int64, count=len(keys))

    def take(self, keys: Sequence[Hashable]) -> np.ndarray:
        """[K, ...] a copy of the keys' rows, in order."""
        if self._data is None:
            if len(keys):
                raise KeyError(keys[0])
            return np.empty((0, 0), dtype=self._dtype or np.float64)
        return self._data[self.rows(keys)]

    def clear(self) -> None:
        self._row.clear()
        self._data = None

    def _reserve(self, count: int) -> None:
        if count > len(self._data):  # doubling: each row is copied a bounded number of times on average
            grown = np.empty((max(count, 2 * len(self._data)), *self._data.shape[1:]), dtype=self._data.dtype)
            grown[: len(self._data)] = self._data
            self._data = grown
