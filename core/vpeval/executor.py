"""Where per-item work runs: in this process, or in forked worker processes on this machine.

Stages hand the executor a function and items; the function must write its own output (a file per
item) and return something small. This module is a leaf (vpeval.api's `PluginContext.map` uses it);
the `local` executor plugin that wraps it lives in vpeval.builtin.local_executor, and a cluster executor
(the `dask` plugin) implements the same `map`.

Workers die with their parent: a killed run (kill -9, SIGTERM) must not leave processes that keep
writing into the cache, nor keep the cache-entry locks they inherited.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

_TASK: Callable[[Any], Any] | None = None


PR_SET_PDEATHSIG = 1  # linux/prctl.h
PARENT_POLL_SECONDS = 0.5


def _call(item: Any) -> Any:
    assert _TASK is not None
    return _TASK(item)


def die_with_parent(parent: int) -> None:
    """Worker initializer: end this process when `parent` ends.

    Linux delivers SIGKILL at the parent's death (PR_SET_PDEATHSIG; it fires when the thread that forked
    the worker ends, and the pool forks its workers from the thread that calls `map`). A watchdog
    thread covers other systems and a parent that died before prctl took effect.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="vpeval-parent-watch", daemon=True).start()


def start_worker(parent: int, task: Callable[[Any], Any] | None = None) -> None:
    """Worker initializer: die with `parent`, and leave Ctrl-C to it (see `ignore_interrupts`).

    `task` is the function of a spawned worker (a forked one inherits `_TASK`)."""
    global _TASK
    die_with_parent(parent)
    ignore_interrupts()
    if task is not None:
        _TASK = task


def start_method(func: Callable[[Any], Any]) -> str | None:
    """How workers start for `func`: "fork" (they inherit prepared models), "spawn" once this process has
    started CUDA (a forked child cannot use it, and crashes or hangs in it), or None: `func` does not
    pickle, so with CUDA started it runs in this process."""
    from vpeval.device import cuda_started

    if not cuda_started():
        return "fork"
    import pickle

    try:
        pickle.dumps(func)
    except Exception:
        return None
    return "spawn"


def ignore_interrupts() -> None:
    """Worker initializer: ignore SIGINT.

    Ctrl-C reaches every process of the terminal's process group; a worker that took it would print
    a KeyboardInterrupt traceback of its own. The parent gets it too, stops the pool (`stop_pool`)
    and says once that the run was interrupted.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextmanager
def children_ignore_interrupts() -> Iterator[None]:
    """Processes started in this block ignore SIGINT from their first instruction.

    An initializer runs only after a spawned worker has imported its modules, so a Ctrl-C during that
    start would still print a traceback; a child inherits an ignored SIGINT, and Python keeps it ignored.
    A Ctrl-C during the block itself (the few milliseconds of starting processes) is lost: press it again.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """End a process pool now: drop the queued items and kill the workers.

    Leaving the pool's `with` block instead waits for every queued item, so an interrupted or failed
    stage would go on computing. Items write their own outputs atomically, so a killed item leaves
    nothing half-written (as with kill -9, which the workers must survive anyway).
    """
    processes = list((getattr(pool, "_processes", None) or {}).values())  # private, but the only handle on them
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown forgets it; the exit hook does not
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join()
    pool.shutdown(wait=True)
    # Python 3.11's exit hook wakes every pool's manager thread it still lists, and the wake-up pipe of a pool
    # ended this way may be closing at that moment: "Exception ignored ... Bad file descriptor" after the
    # run's own message. The first shutdown (wait=False) forgot the thread without joining it, so it may
    # still be winding down here: join it (its workers are dead, so it ends at once), then unlist it.
    from concurrent.futures import process as pool_module

    if manager is not None:
        manager.join(timeout=10)
        if not manager.is_alive():
            getattr(pool_module, "_threads_wakeups", {}).pop(manager, None)


class LocalExecutor:
    """`workers` = 1 runs in-process; more forks workers that inherit prepared models (no pickling).

    Once CUDA has started in this process, workers are spawned instead (func is pickled to them), and a
    func that does not pickle runs here: GPU stages batch in one process rather than fan out."""

    def __init__(self, workers: int = 1):
        self.workers = max(1, workers)

    def map(self, func: Callable[[Any], Any], items: list[Any]) -> Iterator[Any]:
        """Results in completion order (each stage writes per-item outputs, so order does not matter)."""
        method = start_method(func) if self.workers > 1 and len(items) > 1 else None
        if method is None:
            for item in items:
                yield func(item)
            return
        global _TASK
        _TASK = func
        try:
            context = multiprocessing.get_context(method)
            workers = min(self.workers, len(items))
            initargs = (os.getpid(),) if method == "fork" else (os.getpid(), func)
            pool = ProcessPoolExecutor(workers, context, initializer=start_worker, initargs=initargs)
            try:
                with children_ignore_interrupts():  # the workers are forked while submitting
                    futures = [pool.submit(_call, item) for item in items]
                for future in as_completed(futures):
                    yield future.result()
            except BaseException:  # Ctrl-C, a failed item, or a consumer that stopped: end the workers now
                stop_pool(pool)
                raise
            pool.shutdown()
        finally:
            _TASK = None
