"""The built-in `local` executor plugin: this machine's processes (vpeval.executor.LocalExecutor)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from pydantic import Field

from vpeval.api import Executor, Params
from vpeval.executor import LocalExecutor


class LocalProcesses(Executor):
    """This machine: in-process, or forked worker processes that die with the run (the default)."""

    name = "local"

    class Params(Params):
        workers: int | None = Field(
            default=None, ge=1, le=1024, description="worker processes; default: the experiment's top-level `workers`"
        )

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._local = LocalExecutor(self.params.workers or self.context.workers)

    @property
    def workers(self) -> int:
        return self._local.workers

    def map(self, func: Callable[[Any], Any], items, description: str = "") -> Iterator[Any]:
        """Forked workers inherit prepared models (nothing is pickled but items and results)."""
        return self._local.map(func, list(items))
