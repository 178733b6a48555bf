"""The one error boundary of the `vpeval` command line: what a user sees when a command fails.

Every command runs inside `GuardedGroup.invoke`, which sorts what escapes it into four kinds:

- a UserError (bad input): its sentence, exit code 2;
- an OSError (the machine: permissions, a full disk, a name too long, a file where a folder belongs, a file
  past `ulimit -f`): one sentence naming the path and what to do, exit code 2; a deleted working directory,
  and running out of memory (a MemoryError, or a library that `ulimit -v` keeps from loading, whatever a
  plugin made of it), are each one sentence too;
- Ctrl-C: one line saying how to resume, exit code 130;
- anything else is a bug, in vpeval or in a plugin: the traceback goes to the run's run.log (else a
  file in the temporary folder) and the terminal gets one line saying whose bug it is, where the
  traceback is and how to report it, exit code 1.

The command line tells the boundary which places it works in (`note_place`: the cache, the run folder,
a report file), so a message can name the option that moves them; the run console tells it the run's
log file (`note_run_log`). This module imports only the standard library and click.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import click

from vpeval.errors import UserError

INTERRUPTED = "interrupted; rerun the same command to resume (finished stages are cached)"
EXIT_USER, EXIT_BUG, EXIT_INTERRUPTED = 2, 1, 130


@dataclass
class Place:
    path: Path
    what: str  # "the cache", "the run folder", "the report file"
    option: str  # the option that moves it elsewhere


_places: list[Place] = []
_run_log: list[Path] = []  # the current run's log file, once the run folder exists


def note_place(path: str | Path, what: str, option: str) -> None:
    """Say that the command works in `path`, which `option` can move (messages then name both)."""
    _places.append(Place(Path(path), what, option))


def note_run_log(path: str | Path) -> None:
    """The running command writes its log to `path`: a bug's traceback goes there too."""
    _run_log[:] = [Path(path)]


def reset() -> None:
    """Forget places and logs of a previous command (tests invoke several in one process)."""
    _places.clear()
    _run_log.clear()


class GuardedGroup(click.Group):
    """A click group whose callback and subcommands all run inside the error boundary."""

    def invoke(self, ctx: click.Context):
        reset()
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise  # click's own usage errors and exits keep their wording and codes
        except KeyboardInterrupt:
            _interrupted()
        except BrokenPipeError:
            raise  # stdout closed by `| head`: click exits quietly
        except Exception as exc:  # noqa: BLE001 - the boundary: sorted below
            _fail(*_sorted(exc))


def _sorted(exc: Exception) -> tuple[str, int]:
    """The terminal's line and the exit code for what escaped a command."""
    if not _cwd_exists():  # checked first: every relative path (and the messages' own) fails without it
        return (
            "Error: the working directory (the folder this command started in) was deleted or moved while it ran; "
            "cd to an existing folder and rerun the same command.",
            EXIT_USER,
        )
    if _out_of_memory(exc):
        return f"Error: {_memory_sentence()}", EXIT_USER
    if isinstance(exc, UserError):
        return f"Error: {exc}", exc.exit_code
    if isinstance(exc, OSError):
        return f"Error: {environment_message(exc)}", EXIT_USER
    return report_bug(exc), EXIT_BUG


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def _out_of_memory(exc: BaseException) -> bool:
    """A MemoryError, or a library that could not be mapped into memory (`ulimit -v`), anywhere in the chain:
    a plugin that words a failed import as a missing package would otherwise blame the package."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError) or (isinstance(current, OSError) and current.errno == errno.ENOMEM):
            return True
        if isinstance(current, ImportError) and any(s in str(current) for s in _NO_MEMORY_TO_LOAD):
            return True
        current = current.__cause__ or current.__context__
    return False


_NO_MEMORY_TO_LOAD = ("failed to map segment", "Cannot allocate memory", "cannot allocate memory")


def _limit(name: str) -> int | None:
    """This process's soft resource limit `name` (RLIMIT_AS, RLIMIT_FSIZE), None when unlimited or unknown."""
    try:
        import resource

        limit = resource.getrlimit(getattr(resource, name))[0]
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return None if limit == resource.RLIM_INFINITY else limit


def _memory_sentence() -> str:
    limit = (
        "" if (most := _limit("RLIMIT_AS")) is None else f" (this process may use {most / 2**30:.3g} GiB: ulimit -v)"
    )
    return (
        f"this machine ran out of memory{limit}; use fewer `workers`, a smaller corpus or batch size, "
        "raise the limit or use a machine with more memory, then rerun the same command (finished stages are cached)."
    )


def _fail(line: str, code: int):
    click.echo(line, err=True)
    sys.exit(code)


def _interrupted():
    # A second Ctrl-C while the run's atexit handlers stop workers and helper processes must not
    # print a traceback of its own.
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass
    for log in _run_log:
        _append(log, f"{time.strftime('%Y-%m-%d %H:%M:%S')} interrupted by the user (Ctrl-C)\n")
    _fail(INTERRUPTED, EXIT_INTERRUPTED)


# -- errors of the machine ----------------------------------------------------------------------


def environment_message(exc: OSError) -> str:
    """One sentence for an OSError: what happened to which path, and what to do about it."""
    path = exc.filename if exc.filename is not None else exc.filename2
    path = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else None
    place = _place_of(path)
    where = _shown(path) if path else _where_unnamed()
    elsewhere = f"pass {place.option} with another folder" if place else "choose another path"
    code = exc.errno
    if code in (errno.EACCES, errno.EPERM):
        target = _existing(path)
        fix = (
            f"make {_shown(target) if target != path else 'it'} readable and writable for your user"
            if target
            else "check its permissions"
        )
        return f"permission denied on {where}; {fix}{', or ' + elsewhere if place else ''}."
    if code == errno.EROFS:
        return f"{where} is on a read-only file system; {elsewhere} on a writable disk."
    if code in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"no space left on the disk of {where}; free space there (old run folders, or the cache, "
            f"which vpeval refills as needed) or {elsewhere} on another disk, then rerun the same command."
        )
    if code == errno.ENAMETOOLONG:
        return (
            f"a name in {where} is too long for the file system (at most 255 bytes per folder or file name); "
            "shorten the name (the `--output` folder, the experiment's `name` or a plugin `label`)."
        )
    if code == errno.ENOTDIR:
        blocker = _file_in_the_way(path)
        what = (
            f"{_shown(blocker)} is a file where a folder belongs"
            if blocker
            else f"a part of {where} is a file where a folder belongs"
        )
        return f"{what}; move that file away or {elsewhere}."
    if code == errno.EEXIST:
        if path and os.path.exists(path) and not os.path.isdir(path):
            return f"{where} is a file where vpeval needs a folder; move that file away or {elsewhere}."
        return f"{where} already exists; remove it or {elsewhere}."
    if code == errno.EISDIR:
        return f"{where} is a folder where a file belongs; give the path of a file."
    if code == errno.ENOENT:
        return f"{where} does not exist (or cannot be made there); check the path (and that its disk is mounted)."
    if code in (errno.EMFILE, errno.ENFILE):
        return f"too many open files (at {where}); raise the limit (`ulimit -n 4096`) or use fewer `workers`."
    if code == errno.ENOMEM:
        return _memory_sentence()
    if code == errno.EFBIG:
        size = _limit("RLIMIT_FSIZE")
        limit = f"the file size limit of this shell (ulimit -f: {size} bytes, {size // 1024} in ulimit's KiB)"
        limit = "the largest file this file system allows" if size is None else limit
        return f"{where} would grow past {limit}; raise the limit (`ulimit -f unlimited`) or {elsewhere}, then rerun."
    if code == errno.EIO:
        return f"input/output error on {where}; the disk or network file system may be failing: check it, then rerun."
    if code == errno.ELOOP:
        return f"{where} is a loop of symbolic links; point the link at a real file or folder."
    reason = exc.strerror or str(exc) or type(exc).__name__
    if not path:  # a socket, a pipe, a library: no file to name
        during = f" while vpeval worked in {where}" if _places else ""
        return (
            f"this machine refused an operation ({type(exc).__name__}: {reason}){during}; "
            "check the machine (disk, network, limits) and rerun the same command."
        )
    return f"{where}: {reason}; check that path (it is this machine's file system, not vpeval, that refused it)."


def _place_of(path: str | None) -> Place | None:
    if not path:
        return None
    target = Path(os.path.abspath(path))
    for place in reversed(_places):  # the latest, most specific place first
        root = Path(os.path.abspath(place.path))
        if target == root or root in target.parents:
            return place
    return None


def _shown(path: str | None) -> str:
    if path is None:
        return "?"
    # a 300-character name would bury the sentence: shorten only the long names, keep the folders whole
    text = os.sep.join(
        f"{part[:24]}...{part[-12:]} ({len(part)} characters)" if len(part) > 60 else part
        for part in str(path).split(os.sep)
    )
    place = _place_of(path)
    if place and os.path.abspath(path) == os.path.abspath(place.path):
        return f"{place.what} {text}"
    return f"{text} (in {place.what} {place.path})" if place else text


def _where_unnamed() -> str:
    """The error names no file: name the places the command writes in."""
    if not _places:
        return "a file vpeval was using"
    return " or ".join(f"{p.what} {p.path}" for p in _places)


def _existing(path: str | None) -> str | None:
    """`path`, or its nearest parent that exists: the folder whose permissions refused it."""
    if not path:
        return None
    for candidate in [Path(path), *Path(path).parents]:
        if candidate.exists():
            return str(candidate)
    return None


def _file_in_the_way(path: str | None) -> str | None:
    """The first existing component of `path` that is not a folder."""
    if not path:
        return None
    current = Path(path)
    for parent in [*reversed(current.parents), current]:
        if parent.exists() and not parent.is_dir():
            return str(parent)
    return None


# -- bugs ---------------------------------------------------------------------------------------


def report_bug(exc: BaseException) -> str:
    """Write the traceback to a file; return the one line for the terminal."""
    culprit = blame(exc)
    text = _bug_report(exc, culprit)
    written = _write_traceback(text)
    summary = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:200]
    if culprit.plugin:
        who = f"plugin {culprit.name} {culprit.version}"
        whom = f"the maintainers of {culprit.name}" + (f" ({culprit.url})" if culprit.url else "")
    else:
        who = f"vpeval {culprit.version}"
        whom = "vpeval's maintainers" + (f" ({culprit.url})" if culprit.url else "")
    if written is None:  # no file could be written: the traceback goes to the terminal after all
        click.echo(text, err=True)
        where = "printed above"
    else:
        where = f"in {os.path.abspath(written)}"
    return (
        f"Error: a bug in {who}, not in your input ({summary}); the full traceback is {where}. "
        f"Please report it to {whom} with that traceback and the output of `vpeval --version`."
    )


@dataclass
class Culprit:
    name: str
    version: str
    plugin: bool
    url: str = ""


def blame(exc: BaseException) -> Culprit:
    """Whose code raised `exc`: the innermost frame in a plugin's package or in vpeval decides.

    Exceptions from worker processes carry the worker's traceback as text (their cause), which is
    read too, so a plugin's bug in a worker is still the plugin's.
    """
    owners = _owners()
    for filename in _innermost_files(exc):
        path = os.path.abspath(filename)
        for root, culprit in owners:
            if path == root or path.startswith(root + os.sep):
                return culprit
    return _core()


def _innermost_files(exc: BaseException) -> list[str]:
    chain, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    files = []
    for e in reversed(chain):  # the deepest cause first: that is where the error began
        frames = [f.filename for f in traceback.extract_tb(e.__traceback__)]
        if type(e).__name__ == "_RemoteTraceback":  # concurrent.futures: the worker's traceback as text
            frames = [line.split('"')[1] for line in str(e).splitlines() if line.strip().startswith('File "')]
        files += reversed(frames)
    return files


def _owners() -> list[tuple[str, Culprit]]:
    """(package folder or module file, its culprit) for every loaded plugin, then vpeval itself."""
    owners: list[tuple[str, Culprit]] = []
    try:
        from vpeval.plugins import get_plugin_manager

        for _kind, reg in get_plugin_manager().all():
            if reg.distribution == "vpeval":
                continue
            root = _module_root(reg.cls.__module__)
            if root:
                owners.append((root, Culprit(reg.distribution, reg.version, True, _url(reg.distribution))))
    except Exception:  # noqa: BLE001 - a broken plugin manager must not hide the bug being reported
        pass
    core = _module_root("vpeval")
    if core:
        owners.append((core, _core()))
    return owners


def _module_root(module_name: str) -> str | None:
    top = sys.modules.get(module_name.split(".")[0])
    filename = getattr(top, "__file__", None)
    if not filename:
        return None
    filename = os.path.abspath(filename)
    return os.path.dirname(filename) if hasattr(top, "__path__") else filename


def _core() -> Culprit:
    from vpeval import __version__

    return Culprit("vpeval", __version__, False, _url("vpeval"))


def _url(distribution: str) -> str:
    """Where a distribution takes reports: its Project-URL for issues, else its home page."""
    from importlib import metadata

    try:
        meta = metadata.metadata(distribution)
    except Exception:  # noqa: BLE001 - not installed as a distribution (a test's fake)
        return ""
    urls = meta.get_all("Project-URL") or []
    for entry in urls:
        label, _, url = entry.partition(",")
        if any(word in label.lower() for word in ("issue", "bug", "tracker")):
            return url.strip()
    return (urls[0].partition(",")[2].strip() if urls else "") or (meta.get("Home-page") or "")


def _bug_report(exc: BaseException, culprit: Culprit) -> str:
    import platform

    from vpeval import __version__

    whose = f"plugin {culprit.name} {culprit.version}" if culprit.plugin else f"vpeval {culprit.version}"
    return (
        f"{time.strftime('%Y-%m-%d %H:%M:%S')} a bug in {whose}; please report it with this traceback\n"
        f"vpeval {__version__}, Python {platform.python_version()}, {platform.platform()}\n"
        f"command: {' '.join(sys.argv)}\n\n" + "".join(traceback.format_exception(exc))
    )


def _write_traceback(text: str) -> Path | None:
    """Append to the run's run.log; without one, a new file in the temporary folder (else the cache)."""
    for log in _run_log:
        if log.parent.is_dir() and _append(log, "\n" + text):
            return log
    folders = [Path(tempfile.gettempdir())] + [p.path for p in _places if p.what == "the cache"]
    for folder in folders:
        try:
            fd, name = tempfile.mkstemp(
                prefix=f"vpeval-bug-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".log", dir=folder
            )
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            return Path(name)
        except OSError:
            continue
    return None


def _append(path: Path, text: str) -> bool:
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
        return True
    except OSError:
        return False
