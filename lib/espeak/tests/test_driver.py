"""The shared espeak-ng driver: speech comes back, and a forked child gets an engine of its own."""

import os
from pathlib import Path

import numpy as np
import pytest

from vpeval.testing.interrupts import keep_ctrl_c_live_for_children
from vpeval_espeak.driver import get_engine, require_espeak


def test_a_forked_child_starts_its_own_engine_and_leaves_the_parents_running():
    parent = get_engine()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: its engine is not the parent's, and stopping it must not touch the parent's
        child = get_engine()
        os.write(write, b"1" if child is not parent else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert get_engine() is parent


def test_missing_package_is_one_sentence(monkeypatch):
    import sys

    from vpeval.errors import MissingModelError

    monkeypatch.setitem(sys.modules, "espeakng_loader", None)
    with pytest.raises(MissingModelError, match="The thing needs espeak-ng .* pip install espeakng-loader"):
        require_espeak("The thing")


def test_speech_comes_back_for_a_voice():
    engine = get_engine()
    engine.set_voice("pitch 180 220\n")
    samples = engine.synthesize("hello there")
    assert samples.dtype == np.int16 and len(samples) > engine.sample_rate // 4
    assert np.abs(samples).max() > 1000


SPEAKER = """\
import sys
from pathlib import Path
from vpeval_espeak.driver import get_engine

engine = get_engine()
engine.set_voice("pitch 180 220\\n")
try:
    while True:
        engine.synthesize("a sentence long enough to keep the engine busy for a while")
        Path(sys.argv[1]).write_text(str(engine._process.pid))
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""


def test_ctrl_c_mid_synthesis_leaves_the_caller_to_report_it(tmp_path):
    """The terminal's Ctrl-C reaches the whole process group: the espeak-ng server (and the child it forks
    per utterance) must not print a KeyboardInterrupt traceback of its own, and must end with the caller."""
    import signal
    import subprocess
    import sys
    import time

    script, ready = tmp_path / "speak.py", tmp_path / "spoke"
    script.write_text(SPEAKER)
    keep_ctrl_c_live_for_children()
    process = subprocess.Popen(
        [sys.executable, str(script), str(ready)], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), process.communicate()[1]
        os.killpg(process.pid, signal.SIGINT)
        err = process.communicate(timeout=30)[1]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130 and err.strip() == "interrupted", err
    # The server, in a process group of its own so the signal missed it, went away with its caller.
    server = Path(f"/proc/{ready.read_text()}")
    deadline = time.monotonic() + 10
    while running(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(server)


def running(proc: Path) -> bool:
    """A process that has not ended. A zombie has ended: once its caller is gone it is the init process's to
    reap, and a container's init (the fresh-clone CI's) may leave it in /proc for a while. A process being torn
    down while its stat is read gives an empty one (seen once in CI): ended too."""
    try:
        fields = proc.joinpath("stat").read_text().rsplit(")", 1)
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = fields[1].split()[:1] if len(fields) == 2 else []
    return state not in ([], ["Z"])
