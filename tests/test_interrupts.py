"""Ctrl-C: exactly one line, exit code 130, and no traceback from any process (workers, helpers).

The terminal sends SIGINT to every process of its foreground process group; the tests do the same
(os.killpg on a process started in a session of its own). Workers and helper servers ignore it and
are ended by their parent, which says once that the run was interrupted (vpeval.boundary).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_error_boundary import experiment

from vpeval import boundary
from vpeval.testing.interrupts import keep_ctrl_c_live_for_children

HERE = Path(__file__).parent


def interrupt(
    command: list[str], ready, env: dict | None = None, timeout: float = 60
) -> tuple[subprocess.CompletedProcess, float]:
    """Start `command` in a session of its own, wait until ready() is true, Ctrl-C its whole process group;
    (its result, seconds it took to exit after the signal)."""
    keep_ctrl_c_live_for_children()
    process = subprocess.Popen(
        command,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while not ready() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert process.poll() is None and ready(), f"the process never got ready: {process.communicate()}"
        os.killpg(process.pid, signal.SIGINT)
        sent = time.monotonic()
        out, err = process.communicate(timeout=30)
        return subprocess.CompletedProcess(command, process.returncode, out, err), time.monotonic() - sent
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def partial_outputs(cache: Path) -> list[Path]:
    return list((cache / "anonymize").glob("*/*.partial/*.wav"))


def no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr, result.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_mid_anonymization_is_one_line_and_a_rerun_resumes(tmp_path, workers):
    cache, run = tmp_path / "cache", tmp_path / "run"
    command = [
        sys.executable,
        str(HERE / "fake_cli.py"),
        "-e",
        str(experiment(tmp_path, workers=workers)),
        "--cache",
        str(cache),
        "--output",
        str(run),
    ]
    env = {"FAKE_ANONYMIZE_DELAY": "1.0", "OMP_NUM_THREADS": "1"}
    result, seconds = interrupt(command, lambda: bool(partial_outputs(cache)), env)
    assert result.returncode == 130, result.stderr
    no_traceback(result)
    assert result.stderr.strip().splitlines()[-1] == boundary.INTERRUPTED
    assert seconds < 5  # at once, not after every queued utterance (16 of them, 1 s each)
    assert "interrupted by the user" in (run / "run.log").read_text()
    done = len(partial_outputs(cache))
    again = subprocess.run(
        command + ["-q"],
        env={**os.environ, **env, "FAKE_ANONYMIZE_DELAY": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert done >= 1 and (run / "results.json").is_file()
    assert "resuming" in (run / "run.log").read_text()  # what the interrupted run finished was kept


WORKERS = textwrap.dedent("""\
    import sys, time
    from pathlib import Path
    from vpeval.executor import LocalExecutor

    def work(seconds):
        Path(sys.argv[1], f"started-{seconds}").touch()
        time.sleep(seconds)
        return seconds

    try:
        for _ in LocalExecutor(3).map(work, [30, 0, 0, 0]):  # one long item: two workers wait idle for more
            pass
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    """)


def test_ctrl_c_stops_busy_and_idle_workers_at_once_and_quietly(tmp_path):
    script = tmp_path / "workers.py"
    script.write_text(WORKERS)
    result, seconds = interrupt(
        [sys.executable, str(script), str(tmp_path)],
        lambda: (tmp_path / "started-30").exists() and (tmp_path / "started-0").exists(),
    )
    assert result.returncode == 130 and result.stderr.strip() == "interrupted", result.stderr
    assert seconds < 5  # the 30 s item was stopped, not waited for
