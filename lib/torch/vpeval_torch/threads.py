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

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import torch

T = TypeVar("T")


def thread_map(func: Callable[[T], Any], items: Iterable[T], workers: int, threads: int = 1) -> Iterator[Any]:
    """func(item) for every item, yielded in item order, on `workers` threads with `threads` torch threads.

    At most `workers` items are in flight (each holds its own audio), and results wait in order for the
    consumer: keep them small. torch's thread count is the process's, restored when the iterator ends.
    Grad mode and autocast are per thread: set them inside func (torch.inference_mode())."""
    previous = torch.get_num_threads()
    torch.set_num_threads(max(1, threads))
    try:
        if workers <= 1:
            for item in items:
                yield func(item)
            return
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="vpeval-torch") as pool:
            pending: list = []
            for item in items:
                pending.append(pool.submit(func, item))
                if len(pending) > workers:
                    yield pending.pop(0).result()
            for future in pending:
                yield future.result()
    finally:
        torch.set_num_threads(previous)
