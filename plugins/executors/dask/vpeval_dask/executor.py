"""The `dask` executor: per-item work as Dask tasks over batches of items.

The function of a `map` call is pickled once (cloudpickle), scattered to every worker once, and
unpickled once per worker process, so a function that closes over a plugin's torch model does not
send the model with every batch. A function that cannot be pickled runs in this process instead
(forked workers, as the local executor), with one logged note naming the stage.
With `address`, it connects to a running scheduler (a cluster you started, or dask-jobqueue's
SLURMCluster); without, it starts a LocalCluster of worker processes on this machine. The client and
cluster start at the first `map`, so `vpeval validate` and fully cached runs start nothing.
Items are written by the task itself (one file each, atomically) into the cache, so the cache folder
must be on a filesystem that every worker shares with this process; the first `map` checks it.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from vpeval.api import Executor, Params
from vpeval.errors import PluginError
from vpeval_dask.connect import open_client

# Functions unpickled in this (worker) process, by digest: one copy per process, whatever the batches.
_LOADED: OrderedDict[str, Callable[[Any], Any]] = OrderedDict()
_LOADED_KEPT = 4  # a long-lived worker serves many stages; older functions (and their models) are dropped
_LOADING = threading.Lock()


@dataclass(frozen=True)
class PickledFunction:
    """A map call's function as cloudpickle bytes and their digest, scattered once to every worker."""

    digest: str
    payload: bytes

    @classmethod
    def of(cls, func: Callable[[Any], Any]) -> PickledFunction:
        import cloudpickle

        payload = cloudpickle.dumps(func)
        return cls(hashlib.sha256(payload).hexdigest(), payload)

    def load(self) -> Callable[[Any], Any]:
        with _LOADING:
            func = _LOADED.get(self.digest)
            if func is None:
                import cloudpickle

                func = _LOADED[self.digest] = cloudpickle.loads(self.payload)
                while len(_LOADED) > _LOADED_KEPT:
                    _LOADED.popitem(last=False)
            _LOADED.move_to_end(self.digest)
            return func


def set_torch_threads(threads: int) -> None:
    """Torch (when a function loaded it) uses the experiment's thread count (default 1), as the local
    executor's forked workers do, instead of every core of the worker's machine in every worker."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def run_batch(function: PickledFunction | Callable[[Any], Any], batch: Sequence[Any], threads: int = 1) -> list[Any]:
    """One Dask task: func over a batch of items, in this worker process."""
    func = function.load() if isinstance(function, PickledFunction) else function
    set_torch_threads(threads)
    return [func(item) for item in batch]


def read_probe(path: str) -> str | None:
    """What a worker reads at the probe path (None when it cannot see the file)."""
    try:
        return Path(path).read_text()
    except OSError:
        return None


class DaskExecutor(Executor):
    """A Dask cluster: an existing scheduler (`address`) or a LocalCluster of worker processes."""

    name = "dask"
    remote = True

    class Params(Params):
        address: str | None = Field(
            default=None,
            description="scheduler address such as tcp://10.0.0.5:8786; none: a LocalCluster on this machine",
        )
        workers: int = Field(
            default=2, ge=1, le=1024, description="LocalCluster worker processes (unused with `address`)"
        )
        threads_per_worker: int = Field(
            default=1,
            ge=1,
            le=1024,
            description="LocalCluster threads per worker process (1 keeps torch and BLAS deterministic)",
        )
        batch: int = Field(default=16, ge=1, le=100_000, description="items (utterances) per Dask task")
        retries: int = Field(
            default=2,
            ge=0,
            le=100,
            description="reruns of a task that raised; a task on a killed worker is rerun by the scheduler",
        )
        connect_timeout: float = Field(
            default=30.0, gt=0, le=86_400, description="seconds to wait for the scheduler at `address`"
        )

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._client = None
        self._cluster = None
        self._checked_shared = False
        self._noted_local: set[str] = set()  # stages already logged as running here

    # -- connection ---------------------------------------------------------------------------

    @property
    def client(self):
        if self._client is None:
            self._client = self._connect()
        return self._client

    def _connect(self):
        import dask
        from distributed import Client, LocalCluster

        p = self.params
        if p.address is None:
            # Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers, which also turns off glibc's
            # adaptive mmap threshold: every large numpy temporary is then mmapped and unmapped again, and
            # GE2E embedding or McAdams took ~1.5 x the CPU of the same code here (BENCHMARKS.md). Unset it.
            with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
                self._cluster = LocalCluster(
                    n_workers=p.workers,
                    threads_per_worker=p.threads_per_worker,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=logging.WARNING,
                )
            self.context.log.info("dask: started a LocalCluster of %d worker processes", p.workers)
            return Client(self._cluster)
        client = open_client(p.address, p.connect_timeout)  # bounded in time; every failure one PluginError sentence
        self.context.log.info(
            "dask: connected to %s (%d workers)", p.address, len(client.scheduler_info().get("workers", {}))
        )
        return client

    def _check_shared_folder(self) -> None:
        """Each worker must read a file this process just wrote into the cache folder."""
        if self._checked_shared:
            return
        root = self.context.options.get("cache_root")
        if root is None:
            return
        probe = Path(root) / "work" / "executor" / f"probe-{uuid.uuid4().hex}"
        probe.parent.mkdir(parents=True, exist_ok=True)
        token = uuid.uuid4().hex
        probe.write_text(token)
        try:
            seen = self.client.run(read_probe, str(probe))
        finally:
            probe.unlink(missing_ok=True)
        blind = sorted(worker for worker, text in seen.items() if text != token)
        if blind:
            raise PluginError(
                f"executor dask: worker {blind[0]} cannot read the cache folder {root}; vpeval's workers write "
                "results there, so put the cache (VPEVAL_CACHE or --cache) on a filesystem every worker mounts "
                "at the same path."
            )
        self._checked_shared = True

    # -- the executor contract ---------------------------------------------------------------------

    def map(self, func: Callable[[Any], Any], items: Sequence[Any], description: str = "") -> Iterator[Any]:
        """func(item) for every item, yielded as their batches complete."""
        items = list(items)
        if not items:
            return
        try:
            function = PickledFunction.of(func)
        except Exception as exc:  # cloudpickle raises TypeError, PicklingError, AttributeError, ...
            yield from self._map_here(func, items, description, exc)
            return
        self._check_shared_folder()  # connects (the client property) when it has a folder to check
        size = self.params.batch
        pending = dict(enumerate(items[i : i + size] for i in range(0, len(items), size)))
        stage = "".join(c if c.isalnum() or c in "-_." else "-" for c in (description or "map"))[:60]
        losses = 0  # rounds in a row that lost the function before finishing a batch
        while True:
            unfinished = len(pending)
            lost = yield from self._run_batches(function, pending, stage)
            if not lost:
                return
            # a round that finished batches before its workers died made progress: only rounds in a row that
            # finish nothing count against retries (workers restarting slowly can lose a round or two)
            losses = losses + 1 if len(pending) == unfinished else 1
            if losses > self.params.retries:
                raise PluginError(
                    f"executor dask: {description or 'a map stage'}: every worker holding its function died "
                    f"{losses} times in a row before finishing a batch; check the workers' memory and logs."
                )
            self.context.log.warning(
                "dask: %s: every worker holding its function died; sending it again for the %d unfinished batch(es)",
                description or "a map stage",
                len(pending),
            )

    def _run_batches(self, function: PickledFunction, pending: dict[int, list[Any]], stage: str):
        """Yields the results of the pending batches (removing each once yielded); returns True when the
        function was lost with the workers that held it (scattered data has no recipe: send it again)."""
        from distributed import as_completed
        from distributed.client import FutureCancelledError

        client = self.client
        client.wait_for_workers(1)  # a scheduler whose workers (SLURM jobs) have not started, or restart
        shipped = client.scatter(function, broadcast=True, hash=False)
        futures = {
            client.submit(
                run_batch,
                shipped,
                batch,
                self.context.threads,
                pure=False,
                retries=self.params.retries,
                key=f"vpeval-{stage}-{index}-{uuid.uuid4().hex[:8]}",
            ): index
            for index, batch in pending.items()
        }
        try:
            for future in as_completed(futures):
                try:
                    results = future.result()
                except FutureCancelledError:
                    return True  # its input, the function, was forgotten with the last worker that held it
                del pending[futures[future]]
                yield from results
            return False
        finally:
            client.cancel([f for f in futures if not f.done()])
            shipped.release()

    def _map_here(
        self, func: Callable[[Any], Any], items: list[Any], description: str, why: Exception
    ) -> Iterator[Any]:
        """A function that cannot be pickled runs in this process's forked workers, noted once per stage."""
        from vpeval.executor import LocalExecutor

        workers = self.context.workers
        stage = description or "a map stage"
        if stage not in self._noted_local:
            self._noted_local.add(stage)
            self.context.log.warning(
                "dask: %s runs on this machine (%d worker process%s), not on the cluster: its "
                "function cannot be pickled (%s: %s)",
                stage,
                workers,
                "" if workers == 1 else "es",
                type(why).__name__,
                str(why).splitlines()[0][:200] if str(why) else "",
            )
        return LocalExecutor(workers).map(func, items)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
