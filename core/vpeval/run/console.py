"""Progress bars with ETA and the run log: what a user watches while a run works."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

T = TypeVar("T")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class RunConsole:
    """One console per run: a rich progress display on stderr and a log file in the run folder."""

    def __init__(self, log_file: Path | None = None, quiet: bool = False):
        self.console = Console(stderr=True, quiet=quiet)
        self.log = logging.getLogger("vpeval")
        self.log.setLevel(logging.INFO)
        self.log.propagate = False
        for handler in list(self.log.handlers):
            self.log.removeHandler(handler)
            handler.close()
        if not quiet:
            rich_handler = RichHandler(console=self.console, show_path=False, show_time=False, markup=False)
            rich_handler.setLevel(logging.INFO)
            self.log.addHandler(rich_handler)
        if log_file is not None:
            log_file.parent.mkdir(parents=True, exist_ok=True)
            from vpeval.boundary import note_run_log

            note_run_log(log_file)  # a crash's traceback goes into this run's log
            file_handler = logging.FileHandler(log_file, mode="a", encoding="utf-8")
            file_handler.setFormatter(logging.Formatter(LOG_FORMAT))
            self.log.addHandler(file_handler)
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            disable=quiet or not sys.stderr.isatty(),
        )

    def __enter__(self) -> RunConsole:
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()
        for handler in list(self.log.handlers):
            handler.flush()
            if isinstance(handler, logging.FileHandler):
                self.log.removeHandler(handler)
                handler.close()

    def track(self, items: Iterable[T], total: int | None = None, description: str = "") -> Iterator[T]:
        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        task = self.progress.add_task(description, total=total)
        try:
            for item in items:
                yield item
                self.progress.advance(task)
        finally:
            self.progress.remove_task(task)
