"""How the `vpeval` command ends: the interpreter's own shutdown steps, then the process ends at once.

At exit CPython joins the threads, runs the atexit handlers and flushes stdout and stderr, then frees every
module and object. With torch, speechbrain and matplotlib loaded that last part took 0.6-0.9 s of every run
on this project's 2-core machine (BENCHMARKS.md), time the operating system does in an instant when the
process ends. The steps that matter (a thread's last write, logging's flush, multiprocessing's children, any
exit handler a plugin registers) still run, in the interpreter's order; only the freeing is skipped.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn


def run_then_exit(command: Callable[[], object]) -> NoReturn:
    """Run `command` (a click command in standalone mode, which ends with SystemExit), then end the process
    with its exit status. Anything else that escapes it takes the interpreter's usual way out."""
    try:
        command()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    os._exit(finish(code))


def finish(code: object) -> int:
    """The shutdown steps of Py_FinalizeEx before its teardown; the exit status SystemExit(code) would give."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # joins non-daemon threads after the pools' exit hooks
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`) or stream: nothing more can reach it
            pass
    return status
