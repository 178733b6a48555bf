"""Progress bars with ETA and the run log: what a user watches while a run works.

Off a terminal (piped into a file or a CI log) there is no bar; each loop then logs one line when it
starts, one about every 30 s with counts, elapsed time and ETA, and one when it ends."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

T = TypeVar("T")

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
PIPED_EVERY_S = 30.0  # off a terminal, a progress line about this often


class RunConsole:
    """One console per run: a rich progress display on stderr and a log file in the run folder."""

    def __init__(self, log_file: Path | None = None, quiet: bool = False):
        self.console = Console(stderr=True, quiet=quiet)
        self.piped = not quiet and not sys.stderr.isatty()
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
            disable=quiet or self.piped,
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
        if self.piped:
            yield from self._track_in_lines(items, total, description)
            return
        task = self.progress.add_task(description, total=total)
        try:
            for item in items:
                yield item
                self.progress.advance(task)
        finally:
            self.progress.remove_task(task)

    def _track_in_lines(self, items: Iterable[T], total: int | None, description: str) -> Iterator[T]:
        started = last = time.monotonic()
        done = 0
        self.log.info("%s: started, %s to do", description, "?" if total is None else total)
        for item in items:
            yield item
            done += 1
            now = time.monotonic()
            if now - last >= PIPED_EVERY_S:
                last = now
                self.log.info("%s: %s", description, progress_line(done, total, now - started))
        self.log.info("%s: %d done in %s", description, done, _clock(time.monotonic() - started))


def progress_line(done: int, total: int | None, elapsed: float) -> str:
    """'120/400 (30 %), 1:05 elapsed, eta 2:31': the counts, the time so far and the time left at this pace."""
    if not total:
        return f"{done} done, {_clock(elapsed)} elapsed"
    eta = elapsed / done * (total - done) if done else 0.0
    return f"{done}/{total} ({100 * done // total} %), {_clock(elapsed)} elapsed, eta {_clock(eta)}"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
