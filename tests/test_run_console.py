"""Progress off a terminal (issue 37): piped into a file or CI log, each stage says when it starts and ends,
and a long loop logs counts, elapsed time and ETA about every 30 s instead of drawing a bar."""

import logging

from tests_runner_helpers import SMALL

from vpeval.config import load_experiment_text
from vpeval.run import console as console_module
from vpeval.run.console import RunConsole, progress_line
from vpeval.run.runner import Runner


def test_progress_line_counts_elapsed_and_eta():
    assert progress_line(100, 400, 65.0) == "100/400 (25 %), 1:05 elapsed, eta 3:15"
    assert progress_line(3, None, 3725.0) == "3 done, 1:02:05 elapsed"


def test_a_piped_loop_logs_start_every_30_s_and_end(tmp_path, monkeypatch):
    clock = iter(float(t) for t in [0, 10, 31, 40, 70, 75, 80])  # start, then one reading per item, then the end
    monkeypatch.setattr(console_module.time, "monotonic", lambda: next(clock))
    with RunConsole(tmp_path / "run.log") as console:
        assert console.piped  # pytest's stderr is no terminal
        console.log.handlers = [h for h in console.log.handlers if isinstance(h, logging.FileHandler)]
        assert list(console.track(range(5), description="embed ecapa")) == list(range(5))
    lines = [line.split(": ", 1)[1] for line in (tmp_path / "run.log").read_text().splitlines()]
    assert lines == [
        "embed ecapa: started, 5 to do",
        "embed ecapa: 2/5 (40 %), 0:31 elapsed, eta 0:46",
        "embed ecapa: 4/5 (80 %), 1:10 elapsed, eta 0:18",
        "embed ecapa: 5 done in 1:20",
    ]


def test_a_piped_run_says_when_each_stage_starts_and_ends(tmp_path, fake_plugins):
    exp = load_experiment_text(SMALL.format(seed=0), "small.yaml")
    Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=False).run()
    log = (tmp_path / "run" / "run.log").read_text()
    for stage in ("anonymize", "train", "score", "metrics"):
        started = [line for line in log.splitlines() if f"{stage} " in line and line.endswith(": computing")]
        ended = [line for line in log.splitlines() if f"{stage} " in line and ": computed in " in line]
        assert started and len(started) == len(ended), stage
    assert ": started, " in log and " done in " in log  # the anonymization loop's own lines
