"""Inter-process locks on files (fcntl.flock): one writer per cache entry and per run folder.

The kernel releases a flock when every process holding it has exited, however it died, so a killed
run never leaves a lock that blocks the next one. The file keeps the holder's pid for the waiting
message. Lock files stay behind: removing one while another process waits on it would let a third
process lock a new file of the same name at the same time.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# Locks this process holds: taking one again is a no-op (a second flock on a new descriptor of the same
# file would wait for ourselves). Keyed with the pid, since forked children inherit the set.
_HELD: set[tuple[int, str]] = set()


@contextmanager
def file_lock(path: Path, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` for the block; call on_wait(holder) first if another process has it."""
    name = (os.getpid(), os.path.abspath(path))
    if name in _HELD:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(_holder(fd))
            fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD.add(name)
        try:
            yield
        finally:
            _HELD.discard(name)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return f"pid {text}" if text.isdigit() else "another process"
