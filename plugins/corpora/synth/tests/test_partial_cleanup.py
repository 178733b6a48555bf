"""A generation killed half-way leaves its `.partial-PID` folder; the next start removes it (and only it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from vpeval_synth.source import remove_stale_partials

GENERATE = """
import sys
from pathlib import Path
from vpeval.api import PluginContext
from vpeval_synth.source import SynthCorpus
SynthCorpus(SynthCorpus.Params(preset="tiny", speakers=6, utterances=6), PluginContext(0, Path(sys.argv[1]))).load()
"""


def _wait_for(predicate, seconds: float = 60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_killed_generation_is_cleaned_at_the_next_start(tmp_path, make_source):
    child = subprocess.Popen([sys.executable, "-c", GENERATE, str(tmp_path)])
    try:
        # Kill it once it has written some audio into its partial folder.
        partial = _wait_for(
            lambda: next((p for p in tmp_path.glob("synth-*.partial-*") if any(p.rglob("*.wav"))), None)
        )
        assert partial.name.endswith(f".partial-{child.pid}")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert partial.is_dir()  # what a kill -9 leaves behind

    corpus = make_source(tmp_path, preset="tiny", speakers=6, utterances=6).load()
    assert not list(tmp_path.glob("synth-*.partial-*"))
    assert len(corpus) == 36 and all(Path(u.path).is_file() for u in corpus.utterances)


def test_folders_of_live_processes_and_other_names_are_kept(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        folders = {
            "dead": tmp_path / f"synth-0123.partial-{dead.pid}",
            "live": tmp_path / f"synth-0123.partial-{live.pid}",
            "own": tmp_path / f"synth-4567.partial-{os.getpid()}",
            "complete": tmp_path / "synth-0123",
            "other": tmp_path / "notes.partial-x",
        }
        for folder in folders.values():
            folder.mkdir()
            (folder / "a.wav").write_bytes(b"RIFF")
        assert remove_stale_partials(tmp_path) == [folders["dead"]]
        assert not folders["dead"].exists()
        assert all(folders[k].is_dir() for k in ("live", "own", "complete", "other"))
    finally:
        live.kill()
        live.wait()
