"""Torch inference on every core without changing a number: `workers` Python threads, each running whole
batches with the run's `threads` torch threads.

A CPU kernel's sums depend on how many threads split it (two torch threads give other last bits than one), so
giving a run's cores to one forward pass as torch threads makes the numbers depend on the core count. Here
the cores go to batches instead: each batch is computed as it would be alone, at the torch thread count the
experiment names (`threads`, 1 by default), and torch releases the interpreter lock inside its kernels, so
the batches run side by side. The batches themselves must not depend on `workers` (fixed length buckets).
No process is forked, so it also holds once CUDA has started (but a GPU batches in one stream instead).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import torch

T = TypeVar("T")


def thread_map(
    func: Callable[[T], Any], items: Iterable[T], workers: int, threads: int = 1, ahead: int = 4
) -> Iterator[Any]:
    """func(item) for every item, yielded in item order, on `workers` threads with `threads` torch threads.

    At most `workers` items run at a time (each holds its own audio); up to `ahead` x `workers` are queued
    or done and waiting in order for the consumer, so a thread whose item ends early takes the next one
    instead of idling behind a longer item at the head of the queue: keep results small. torch's thread
    count is the process's, restored when the iterator ends. Grad mode and autocast are per thread: set
    them inside func (torch.inference_mode())."""
    previous = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        if workers <= 1:
            for item in items:
                yield func(item)
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vpeval-torch") as pool:
            pending: deque = deque()
            try:
                for item in items:
                    pending.append(pool.submit(func, item))
                    if len(pending) > max(1, ahead) * workers:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:  # an error or an abandoned iterator: queued items do not start
                for future in pending:
                    future.cancel()
    finally:
        torch.set_num_threads(previous)


def grouped_map(
    func: Callable[[list[int]], Sequence[Any]], groups: Sequence[list[int]], count: int, workers: int, threads: int = 1
) -> list[Any]:
    """func(group) for each group of item positions (a result per position, in the group's order), on `workers`
    threads (thread_map; the calling thread where there is one group), each result placed at its position: a
    list of `count`. The groups fix the numbers, so they must not depend on `workers`."""
    out: list[Any] = [None] * count
    for group, results in zip(groups, thread_map(func, groups, workers if len(groups) > 1 else 1, threads)):
        for position, result in zip(group, results, strict=True):
            out[position] = result
    return out


def longest_first(groups: Sequence[Sequence[int]], sizes: Sequence[int]) -> list[int]:
    """Positions of `groups` (lists of indices into `sizes`), the largest total size first, ties in order.

    Started in this order on several threads (longest processing time first), the small groups come last
    and fill the gaps, so the threads end a call nearly together instead of one running a whole group alone.
    The groups themselves are unchanged, so are their numbers."""
    totals = [sum(int(sizes[i]) for i in group) for group in groups]
    return sorted(range(len(groups)), key=lambda g: (-totals[g], g))
