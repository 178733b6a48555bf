"""Judge a path a user gave before anything opens it: only regular files are read.

Opening a named pipe waits for a writer forever, a device such as /dev/zero or /dev/urandom never ends,
and a folder fails with a message that does not say why. `os.stat` tells all of these apart without
opening anything (and follows symbolic links, so a link is judged by its target), so every reader of a
user's file calls `regular_file` (or `stat_regular`) first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vpeval.errors import DataError, UserError

_ADVICE = "give the path of a regular file"


class PathProblem(Exception):
    """Why a path is not a readable regular file: `reason` is one clause that starts with "it"."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def stat_regular(path: str | os.PathLike, max_bytes: int | None = None) -> os.stat_result:
    """The stat of `path` (of its target for a link) when it is a regular file within `max_bytes`.

    Raises PathProblem otherwise; nothing is opened.
    """
    path = os.fspath(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise PathProblem(f"it is a link to {os.readlink(path)}, which does not exist") from None
        raise PathProblem("it does not exist") from None
    except NotADirectoryError:
        raise PathProblem("it does not exist (a part of the path before its name is a file, not a folder)") from None
    except PermissionError:
        raise PathProblem("it cannot be reached (permission denied on a folder of the path)") from None
    except ValueError:  # os.stat refuses an embedded NUL character
        raise PathProblem("its name holds a NUL character; correct the path") from None
    except OSError as exc:  # a link loop (ELOOP), a name too long, an I/O error
        raise PathProblem(f"it cannot be examined ({exc.strerror or exc}); {_ADVICE}") from None
    mode = info.st_mode
    if stat.S_ISREG(mode):
        if max_bytes is not None and info.st_size > max_bytes:
            raise PathProblem(
                f"it is {_size(info.st_size)}, over the {_size(max_bytes)} limit for such a file; "
                "check that this is the right file"
            )
        return info
    link = f" (the link leads to {os.path.realpath(path)})" if os.path.islink(path) else ""
    kind, advice = _kind(mode)
    raise PathProblem(f"it is {kind}, not a regular file{link}; {advice}")


def regular_file(
    path: str | os.PathLike, what: str, max_bytes: int | None = None, error: type[UserError] = DataError
) -> Path:
    """`path` as a Path when it is a regular file (within `max_bytes`), else `error` with one sentence.

    `what` names the file in that sentence ("Manifest", "Experiment file"): "Manifest m.csv cannot be
    used: it is a named pipe (FIFO: reading waits for a writer), not a regular file; save the data to a
    file and give that file's path." `error` is the UserError subclass raised (DataError, ConfigError).
    """
    try:
        stat_regular(path, max_bytes)
    except PathProblem as problem:
        shown = os.fspath(path)
        raise error(
            f"{what} {shown if chr(0) not in shown else repr(shown)} cannot be used: {problem.reason}."
        ) from None
    return Path(path)


def output_target(path: str | os.PathLike, overwrite: bool, option: str = "--output") -> Path:
    """Where writing the file `path` lands, judged before any work: a link's target (written through, so the
    link and whatever else points at the file see the new text), or DataError with one sentence.

    Refused: a folder; a device, FIFO or socket even with `overwrite` (replacing one by a regular file is
    never what was meant); an existing file without `overwrite`; a missing folder to write in.
    """
    target = Path(os.path.realpath(path))
    linked = target != Path(os.path.abspath(path))  # a link, or a folder of the path that is one
    shown, through = (target, f" (the link {os.fspath(path)} leads there)") if linked else (os.fspath(path), "")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise DataError(f"{option} {shown}{through} cannot be examined ({exc.strerror or exc}).") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise DataError(f"{option} {shown}{through} is a folder; give the path of a file in it.")
    if mode is not None and not stat.S_ISREG(mode):
        kind, _ = _kind(mode)
        raise DataError(f"{option} {shown}{through} is {kind}, not a regular file; give the path of a file.")
    if mode is not None and not overwrite:
        raise DataError(
            f"{option} {shown}{through} already exists; choose another file, or pass --overwrite to replace it."
        )
    if not target.parent.is_dir():
        raise DataError(f"{option} {shown}{through}: the folder {target.parent} does not exist; create it first.")
    return target


def _kind(mode: int) -> tuple[str, str]:
    """What a non-regular file is (and why it cannot be read), and what to give instead."""
    if stat.S_ISDIR(mode):
        return "a folder", "give the path of a file inside it"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO: reading waits for a writer)", "save the data to a file and give that file's path"
    if stat.S_ISCHR(mode):
        return "a device (like /dev/zero, /dev/urandom or /dev/null: no data on disk)", _ADVICE
    if stat.S_ISBLK(mode):
        return "a block device (a whole disk or partition)", _ADVICE
    if stat.S_ISSOCK(mode):
        return "a socket", "save the data to a file and give that file's path"
    return "a special file", _ADVICE


def _size(n: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"
