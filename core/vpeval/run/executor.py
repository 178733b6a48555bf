"""Where per-item work runs: in this process, or in forked worker processes on this machine.

Stages hand the executor a function and items; the function must write its own output (a file per
item) and return something small. A distributed executor (Dask) can implement the same `map`.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

_TASK: Callable[[Any], Any] | None = None


def _call(item: Any) -> Any:
    assert _TASK is not None
    return _TASK(item)


class LocalExecutor:
    """`workers` = 1 runs in-process; more forks workers that inherit prepared models (no pickling)."""

    def __init__(self, workers: int = 1):
        self.workers = max(1, workers)

    def map(self, func: Callable[[Any], Any], items: list[Any]) -> Iterator[Any]:
        """Results in completion order (each stage writes per-item outputs, so order does not matter)."""
        if self.workers == 1 or len(items) < 2:
            for item in items:
                yield func(item)
            return
        global _TASK
        _TASK = func
        try:
            context = multiprocessing.get_context("fork")
            with ProcessPoolExecutor(max_workers=min(self.workers, len(items)), mp_context=context) as pool:
                futures = [pool.submit(_call, item) for item in items]
                for future in as_completed(futures):
                    yield future.result()
        finally:
            _TASK = None


def consume(results: Iterable[Any]) -> None:
    for _ in results:
        pass
