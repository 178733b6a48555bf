"""`vpeval cache prune`: remove entries last used before an age, or that no given experiment uses.

Without `yes` it only lists what it would remove. It removes only entry folders (entries, partial,
damaged and temporary builds) under the stage folders of the cache root, never a link and never a path
outside the root, each while holding the entry's lock, as a run does while it checks or builds one: an
entry that a running vpeval is building is skipped and named. Lock files stay (vpeval.run.locks says why),
and so do `work/` and `fingerprints/`.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from vpeval.errors import UserError
from vpeval.run.cache import ABOUT
from vpeval_cacheadmin.entries import Entry, human, scan

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """'30d' -> seconds; units s, m, h, d, w."""
    match = _AGE.match(text)
    if match is None:
        raise UserError(f"--older-than {text!r} is not an age; give a number and a unit: 45s, 90m, 12h, 30d or 2w.")
    return float(match[1]) * _SECONDS[match[2]]


@contextmanager
def _unless_locked(entry: Entry, root: Path) -> Iterator[str | None]:
    """Hold the entry's lock for the block and yield None; yield the holder when another process holds it."""
    path = root / entry.stage / entry.key[:2] / f"{entry.key}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            yield f"pid {holder}" if holder.isdigit() else "another process"
            return
        try:
            yield None
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _inside(path: Path, root: Path) -> bool:
    return not path.is_symlink() and path.resolve().is_relative_to(root.resolve())


def select(root: Path, older_than: float | None, used: set[tuple[str, str]] | None) -> list[Entry]:
    """Entries last used more than `older_than` seconds ago and/or whose (stage, key) is not in `used`
    (a damaged copy is never in use)."""
    now = time.time()
    chosen = []
    for entry in scan(root):
        if older_than is not None and now - entry.last_used <= older_than:
            continue
        if used is not None and entry.state != "damaged" and (entry.stage, entry.key) in used:
            continue
        chosen.append(entry)
    return chosen


def prune(root: Path, chosen: list[Entry], yes: bool) -> list[str]:
    """Remove (with `yes`) or list the chosen entries; one line each, then a summary."""
    lines, freed, skipped = [], 0, 0
    for entry in chosen:
        what = f"{entry.stage} {entry.key[:12]} ({entry.state}; {entry.plugins}; {human(entry.size)})"
        if not _inside(entry.path, root):
            lines.append(f"skipped {what}: it is a link or lies outside the cache {root}")
            skipped += 1
            continue
        if not yes:
            lines.append(f"would remove {what}")
            freed += entry.size
            continue
        with _unless_locked(entry, root) as holder:
            if holder is not None:
                lines.append(f"skipped {what}: {holder} is building it")
                skipped += 1
                continue
            shutil.rmtree(entry.path)
            if entry.state == "entry":
                for note in (ABOUT, ".verified.json"):
                    entry.path.with_name(entry.key + note).unlink(missing_ok=True)
        lines.append(f"removed {what}")
        freed += entry.size
    verb = "removed" if yes else "would remove"
    summary = f"{verb} {len(chosen) - skipped} entries, {human(freed)}"
    lines.append(summary + (f"; skipped {skipped}" if skipped else "") + ("" if yes else " (add --yes to remove them)"))
    return lines
