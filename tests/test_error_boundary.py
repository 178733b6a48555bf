"""The command line's one error boundary (vpeval.boundary): the machine's errors and bugs.

Each failure must come out as one sentence naming the path and what to do, with the right exit code
(2 for the input and the machine, 1 for a bug) and no traceback on the terminal; a bug's traceback goes
to a file that the sentence names. Ctrl-C has its own module, test_interrupts.py.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from vpeval import boundary
from vpeval.cli import main

EXPERIMENT = """\
name: boundary
seed: 0
workers: {workers}
data:
  corpus: {{use: fake-corpus, params: {{speakers: 8, utterances: 4}}}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [{anonymizer}]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""


def experiment(tmp_path: Path, anonymizer: str = "fake-shift", workers: int = 1) -> Path:
    path = tmp_path / f"exp-{anonymizer}-{workers}.yaml"
    path.write_text(EXPERIMENT.format(anonymizer=anonymizer, workers=workers))
    return path


def vpeval(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def one_sentence(result, code: int) -> str:
    """The failure's stderr: one line, the expected exit code, no traceback anywhere."""
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def crash_plugin(fake_plugins):
    import fake_crash

    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.register_module(fake_crash, fake_crash.DISTRIBUTION, "0.3", name="vpeval-fake-crash:fake_crash")
    yield fake_crash
    manager.unregister_module(fake_crash)


def refuse_writes_under(monkeypatch, folder: Path) -> None:
    """Make `folder` read-only: chmod, and for root (whom chmod does not stop) refuse as the kernel would."""
    folder.chmod(0o555)
    if os.geteuid() != 0:
        return
    root = os.path.abspath(folder)

    def guard(real, writes):
        def call(path, *args, **kwargs):
            target = os.path.abspath(os.fsdecode(path))
            if (target == root or target.startswith(root + os.sep)) and writes(args, kwargs):
                raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
            return real(path, *args, **kwargs)

        return call

    monkeypatch.setattr(os, "mkdir", guard(os.mkdir, lambda a, k: True))
    monkeypatch.setattr(
        os,
        "open",
        guard(os.open, lambda a, k: bool((a[0] if a else k.get("flags", 0)) & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))),
    )


# -- the machine's errors: one sentence with the path and the remedy, exit code 2 ----------------------


def test_read_only_cache_folder_names_it_and_the_option(tmp_path, fake_plugins, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    refuse_writes_under(monkeypatch, locked)
    try:
        line = one_sentence(
            vpeval("-e", experiment(tmp_path), "--cache", locked / "cache", "--output", tmp_path / "run", "-q"), 2
        )
    finally:
        locked.chmod(0o755)
    assert (
        line.startswith(f"Error: permission denied on {locked / 'cache'}")
        and f"(in the cache {locked / 'cache'})" in line
    )
    assert f"make {locked} readable and writable for your user, or pass --cache with another folder." in line


def test_cache_path_that_is_a_file(tmp_path, fake_plugins):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    for cache in (blocker, blocker / "cache"):
        line = one_sentence(
            vpeval("-e", experiment(tmp_path), "--output", tmp_path / "run", "-q", env={"VPEVAL_CACHE": str(cache)}), 2
        )
        assert str(blocker) in line and "file" in line
    assert blocker.read_text() == "not a folder"


def test_run_folder_under_a_file_names_the_file_in_the_way(tmp_path, fake_plugins):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    line = one_sentence(
        vpeval("-e", experiment(tmp_path), "--cache", tmp_path / "cache", "--output", blocker / "run", "-q"), 2
    )
    assert (
        line == f"Error: {blocker} is a file where a folder belongs; "
        "move that file away or pass --output with another folder."
    )


def test_too_long_output_name(tmp_path, fake_plugins):
    long_name = tmp_path / ("x" * 300)
    line = one_sentence(
        vpeval("-e", experiment(tmp_path), "--cache", tmp_path / "cache", "--output", long_name, "-q"), 2
    )
    assert "too long for the file system" in line and "shorten the name" in line
    # the folders stay whole (however deep the temporary folder is), the long name is cut to its ends
    assert f"{tmp_path}/{'x' * 24}...{'x' * 12} (300 characters)" in line


@pytest.mark.parametrize("filename", [None, "named"])
def test_full_disk_while_writing_results(tmp_path, fake_plugins, monkeypatch, filename):
    import vpeval.report.writer as writer

    def full(path, data):
        raise OSError(errno.ENOSPC, "No space left on device", *([str(path)] if filename else []))

    monkeypatch.setattr(writer, "write_json_atomic", full)
    run = tmp_path / "run"
    line = one_sentence(vpeval("-e", experiment(tmp_path), "--cache", tmp_path / "cache", "--output", run, "-q"), 2)
    assert line.startswith("Error: no space left on the disk of ") and "free space there" in line
    assert f"the run folder {run}" in line  # a write that names no file: the places the command writes in


def test_full_disk_while_writing_a_report_keeps_the_old_file(tmp_path, monkeypatch):
    from test_report_broken_runs import good_run

    run = good_run(tmp_path / "run")
    out = tmp_path / "report.md"
    out.write_text("the old report\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    line = one_sentence(vpeval("report", run, "--output", out, "--overwrite"), 2)
    assert line.startswith(f"Error: no space left on the disk of the report file {out}")
    assert out.read_text() == "the old report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "run"]  # no temporary file left behind


def test_environment_sentences_for_other_errors():
    boundary.reset()
    boundary.note_place("/data/cache", "the cache", "--cache")
    message = boundary.environment_message
    assert message(OSError(errno.EROFS, "Read-only file system", "/data/cache/x")) == (
        "/data/cache/x (in the cache /data/cache) is on a read-only file system; "
        "pass --cache with another folder on a writable disk."
    )
    assert "ulimit -n" in message(OSError(errno.EMFILE, "Too many open files", "/data/cache/y"))
    assert message(OSError(errno.ENOENT, "No such file or directory", "/nope")).startswith("/nope does not exist")
    assert "check that path" in message(OSError(errno.EXDEV, "Invalid cross-device link", "/a"))
    boundary.reset()


# -- bugs: the traceback in a file, one line naming whose bug and how to report it, exit code 1 -------


@pytest.mark.parametrize("workers", [1, 2])
def test_a_plugins_bug_goes_to_run_log_and_names_the_plugin(tmp_path, crash_plugin, workers):
    run = tmp_path / "run"
    line = one_sentence(
        vpeval("-e", experiment(tmp_path, "fake-crash", workers), "--cache", tmp_path / "cache", "--output", run, "-q"),
        1,
    )
    log = run / "run.log"
    assert line.startswith(
        "Error: a bug in plugin vpeval-fake-crash 0.3, not in your input (ZeroDivisionError: division by zero)"
    )
    assert f"the full traceback is in {log.resolve()}" in line
    assert "report it to the maintainers of vpeval-fake-crash" in line and "`vpeval --version`" in line
    text = log.read_text()
    assert "a bug in plugin vpeval-fake-crash 0.3" in text and "Traceback (most recent call last)" in text
    assert "in divide_by_zero" in text and "ZeroDivisionError: division by zero" in text


def test_a_bug_outside_a_run_goes_to_a_file_in_the_temporary_folder(tmp_path, monkeypatch):
    import tempfile

    from vpeval import describe

    def broken(kind, name):
        raise KeyError("schema")

    monkeypatch.setattr(describe, "describe_plugin", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    line = one_sentence(vpeval("describe", "anonymizer", "x"), 1)
    assert line.startswith("Error: a bug in vpeval ") and "(KeyError: 'schema')" in line
    [written] = tmp_path.glob("vpeval-bug-*.log")
    assert f"the full traceback is in {written}" in line
    text = written.read_text()
    assert "command: " in text and "in broken" in text and "KeyError: 'schema'" in text


def test_user_errors_still_exit_2_without_a_traceback_file(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    line = one_sentence(vpeval("describe", "anonymizer", "no-such-plugin"), 2)
    assert line.startswith("Error: No anonymizer plugin named 'no-such-plugin'")
    assert not list(tmp_path.glob("vpeval-bug-*"))
