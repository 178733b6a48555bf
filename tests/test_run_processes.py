"""Runs in their own processes: two runs at once (issue 12 finding 9), a killed run's workers (finding 10)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "fake_run_script.py"

EXPERIMENT = """\
name: processes
seed: 5
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""


def start(tmp_path: Path, output: Path, delay: float, extra: str = "") -> subprocess.Popen:
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(EXPERIMENT + extra)
    env = {**os.environ, "FAKE_ANONYMIZE_DELAY": str(delay), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(SCRIPT), str(experiment), str(tmp_path / "cache"), str(output)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def finish(procs: list[subprocess.Popen]) -> list[dict]:
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-3000:]
    return [json.loads(out)["executed"] for out, _ in outputs]


def computed(executed: list[dict], stage: str) -> int:
    return sum(len(e.get(stage, [])) for e in executed)


def test_two_runs_of_one_experiment_in_one_folder_both_finish(tmp_path):
    executed = finish([start(tmp_path, tmp_path / "run", delay=0.1) for _ in range(2)])
    assert computed(executed, "anonymize") == 1 and computed(executed, "train") == 1, (
        "the second run reuses the first's work"
    )
    assert not list((tmp_path / "cache").rglob("*.partial*")), "no partial folder is left behind"
    assert (tmp_path / "run" / "results.json").is_file()


def test_two_runs_sharing_a_cache_compute_each_entry_once(tmp_path):
    executed = finish([start(tmp_path, tmp_path / f"run-{i}", delay=0.1) for i in range(2)])
    assert computed(executed, "anonymize") == 1 and computed(executed, "train") == 1
    assert not list((tmp_path / "cache").rglob("*.partial*"))
    rows = [json.loads((tmp_path / f"run-{i}" / "results.json").read_text())["rows"] for i in range(2)]
    assert rows[0] == rows[1]


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a live process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0]


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[1] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_workers_die_with_a_killed_run(tmp_path, sig):
    proc = start(tmp_path, tmp_path / "run", delay=0.3, extra="workers: 2\n")
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not list((tmp_path / "cache" / "anonymize").rglob("*.wav")):
            assert proc.poll() is None and time.monotonic() < deadline, (
                proc.stderr.read() if proc.poll() is not None else "timeout"
            )
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert len(workers) >= 2, "the run anonymizes in worker processes"
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 5
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "workers die with their parent"
        written = len(list((tmp_path / "cache").rglob("*.wav")))
        time.sleep(1.0)
        assert len(list((tmp_path / "cache").rglob("*.wav"))) == written, "nothing writes into the cache any more"
    finally:
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
