"""Faults of the machine named for what they are (issue 38, part 6), each one sentence and exit code 2.

Before: a full disk while anonymized speech was written printed soundfile's cffi callback tracebacks and
then an unrelated error; `ulimit -f` killed vpeval with SIGXFSZ ("File size limit exceeded", no file
named); a deleted working directory crashed the error handler itself (boundary._place_of); a memory
limit that stopped torch from loading was reported as "needs the resemblyzer package".
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

import vpeval.audio as audio_module
from tests.test_error_boundary import experiment, one_sentence, vpeval
from tests.test_report_broken_runs import good_run
from vpeval.audio import write_audio


@pytest.fixture
def full_disk(monkeypatch):
    """Every audio file vpeval writes goes to /dev/full, which refuses writes as a full disk does."""
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_WRONLY), name

    monkeypatch.setattr(audio_module, "tempfile", types.SimpleNamespace(mkstemp=mkstemp))


def test_a_full_disk_while_audio_is_written_names_the_file(tmp_path, full_disk, capfd):
    with pytest.raises(OSError) as err:
        write_audio(tmp_path / "a.wav", np.zeros(1600, dtype=np.float32), 16000)
    assert err.value.filename == str(tmp_path / "a.wav") and err.value.errno == 28
    assert "Traceback" not in capfd.readouterr().err  # soundfile's callback printed one per failed write
    assert list(tmp_path.iterdir()) == []


def test_a_full_cache_disk_during_anonymization_is_the_no_space_sentence(tmp_path, fake_plugins, full_disk):
    cache = tmp_path / "cache"
    result = vpeval("-e", experiment(tmp_path), "--cache", cache, "--output", tmp_path / "run", "-q")
    line = one_sentence(result, 2)
    assert line.startswith("Error: no space left on the disk of ") and f"(in the cache {cache})" in line, line


def _cli(code: str, cwd: Path, limits: dict | None = None) -> subprocess.CompletedProcess:
    def apply_limits():
        import resource

        for name, value in (limits or {}).items():
            resource.setrlimit(getattr(resource, name), (value, value))

    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120, preexec_fn=apply_limits
    )


def _report(run: Path, output: str) -> str:
    return f"from vpeval.cli import main; main(['report', {str(run)!r}, '--output', {output!r}])"


def test_a_file_size_limit_names_the_file_and_the_limit(tmp_path):
    run = good_run(tmp_path / "run")
    done = _cli(_report(run, str(tmp_path / "out.md")), tmp_path, {"RLIMIT_FSIZE": 100})
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.strip() == (
        f"Error: the report file {tmp_path / 'out.md'} would grow past the file size limit of this shell "
        "(ulimit -f: 100 bytes, 0 in ulimit's KiB); raise the limit (`ulimit -f unlimited`) or pass --output with "
        "another folder, then rerun."
    )
    assert not (tmp_path / "out.md").exists()


def test_a_deleted_working_directory_is_one_sentence(tmp_path):
    run = good_run(tmp_path / "run")
    gone = tmp_path / "gone"
    gone.mkdir()
    code = f"import os; os.rmdir({str(gone)!r}); " + _report(run, "out.md")
    done = _cli(code, gone)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.strip() == (
        "Error: the working directory (the folder this command started in) was deleted or moved while it ran; "
        "cd to an existing folder and rerun the same command."
    )


def test_a_library_that_cannot_be_mapped_is_a_memory_limit_not_a_missing_package(tmp_path):
    """The ge2e encoder words an ImportError as a missing package; under `ulimit -v` torch cannot be mapped."""
    code = (
        "import click\n"
        "from vpeval.boundary import GuardedGroup\n"
        "from vpeval.errors import MissingModelError\n"
        "@click.group(cls=GuardedGroup)\n"
        "def main(): pass\n"
        "@main.command()\n"
        "def load():\n"
        "    try:\n"
        "        import torch  # noqa: F401\n"
        "    except ImportError as exc:\n"
        "        raise MissingModelError(f'The ge2e encoder needs the resemblyzer package ({exc}).') from exc\n"
        "    print('loaded')\n"
        "main(['load'])\n"
    )
    done = _cli(code, tmp_path, {"RLIMIT_AS": 600 * 2**20})
    if "loaded" in done.stdout:
        pytest.skip("torch loads within 600 MiB of address space here")
    assert done.returncode == 2, (done.returncode, done.stderr)
    line = done.stderr.strip()
    assert line.startswith("Error: this machine ran out of memory (this process may use 0.586 GiB: ulimit -v)"), line
    assert "resemblyzer" not in line
