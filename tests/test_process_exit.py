"""The `vpeval` script ends without the interpreter's teardown, but after everything the interpreter's exit does
before it: threads joined, exit handlers run, output flushed, the exit status SystemExit gives."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import atexit, os, sys, threading, time
    from vpeval.process_exit import run_then_exit

    class FreedAtTeardown:
        def __del__(self):
            os.write(1, b"teardown ran\\n")

    kept = FreedAtTeardown()  # a module global: freed only when the interpreter tears its modules down
    atexit.register(lambda: os.write(1, b"exit handler ran\\n"))

    def late_write():
        time.sleep(0.2)
        sys.stdout.write("thread finished\\n")  # buffered: flushed only if the exit flushes after the join

    def command():
        threading.Thread(target=late_write).start()
        sys.stdout.write("command ran\\n")
        sys.exit({code})

    run_then_exit(command)
    """
)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT.format(code=code)], capture_output=True, text=True, timeout=60)


def test_the_exit_skips_only_the_teardown():
    done = _run("3")
    assert done.returncode == 3
    # The handler writes unbuffered, so it may come first; the thread's buffered line shows the flush came last.
    assert sorted(done.stdout.splitlines()) == ["command ran", "exit handler ran", "thread finished"]


def test_exit_statuses_are_those_of_system_exit():
    assert _run("None").returncode == 0
    message = _run("'no such file'")
    assert message.returncode == 1
    assert "no such file" in message.stderr


def test_the_vpeval_script_ends_with_its_status():
    done = subprocess.run(
        [sys.executable, "-m", "vpeval", "--experiment", "/nonexistent/experiment.yaml"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "experiment.yaml" in done.stderr
