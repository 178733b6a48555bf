"""`vpeval report` on broken run folders, its --output file, and unknown names on the command line.

Every broken file gets one sentence naming it and what is wrong, exit code 2 and no traceback, on
every report path (the combined report and the paper tables load runs through one loader).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vpeval.cli import main

ROW = {
    "anonymizer": "mcadams",
    "attacker": "ge2e",
    "scenario": "original",
    "protocol": "O-A",
    "n": 1,
    "metric": "eer",
    "metric_plugin": "eer",
    "gender": "all",
    "value": 31.5,
    "ci_low": None,
    "ci_high": None,
    "unit": "%",
    "details": {},
}
RESOLVED = {
    "data": {"corpus": {"use": "synth", "distribution": "vpeval-synth", "version": "0.1.0"}},
    "anonymizers": [{"label": "mcadams", "chain": [{"use": "mcadams"}], "level": "utterance"}],
    "attackers": [{"label": "ge2e", "use": "ge2e", "train_on": "original"}],
}


def good_run(folder: Path, rows=None) -> Path:
    """A run folder as `vpeval --experiment` writes it (the parts reports read)."""
    folder.mkdir(parents=True)
    results = {
        "experiment": "demo",
        "vpeval_version": "0.1.0",
        "corpus": {"evaluation_speakers": 4},
        "trials": {"1": 16},
        "rows": [ROW] if rows is None else rows,
    }
    (folder / "results.json").write_text(json.dumps(results))
    (folder / "resolved.yaml").write_text(yaml.safe_dump(RESOLVED))
    return folder


def vpeval(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def refused(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def with_row(**changes):
    row = {**ROW, **changes}
    return {"experiment": "demo", "rows": [{k: v for k, v in row.items() if v is not ...}]}


BROKEN_RESULTS = {
    "invalid JSON": ('{"rows": [', "is not valid JSON (Expecting value at line 1"),
    "empty file": ("", "is not valid JSON"),
    "a list": ("[]", "holds a list, not the mapping vpeval writes there"),
    "an empty mapping": ("{}", "results.json has no `rows`"),
    "rows not a list": (json.dumps({"rows": {"a": 1}}), "rows is {'a': 1} (a mapping), not a list"),
    "a row missing its metric": (json.dumps(with_row(metric=...)), "rows[0] has no `metric`"),
    "a row missing its value": (json.dumps(with_row(value=...)), "rows[0] has no `value`"),
    "a string value": (json.dumps(with_row(value="31.5")), "rows[0].value is '31.5' (a string), not a number"),
    "a string N": (json.dumps(with_row(n="1")), "rows[0].n is '1' (a string), not a whole number"),
    "a number as anonymizer": (json.dumps(with_row(anonymizer=5)), "rows[0].anonymizer is 5 (a number), not text"),
    "a row that is a list": (json.dumps({"rows": [[1, 2]]}), "rows[0] is [1, 2] (a list), not a mapping"),
    "not UTF-8": (b"\xff\xfe{}", "is not UTF-8 text"),
}


@pytest.mark.parametrize(
    "options", [[], ["--format", "md"], ["--format", "latex", "--metric", "eer"]], ids=["combined", "paper", "latex"]
)
@pytest.mark.parametrize("case", sorted(BROKEN_RESULTS))
def test_broken_results_json_is_one_sentence_on_every_report_path(tmp_path, case, options):
    content, expected = BROKEN_RESULTS[case]
    run = good_run(tmp_path / "run")
    target = run / "results.json"
    target.write_bytes(content if isinstance(content, bytes) else content.encode())
    line = refused(vpeval("report", run, *options))
    assert line.startswith(f"Error: {target}") and expected in line, line
    assert "rerun its experiment" in line


def test_results_json_that_is_a_folder(tmp_path):
    run = good_run(tmp_path / "run")
    (run / "results.json").unlink()
    (run / "results.json").mkdir()
    line = refused(vpeval("report", run))
    assert line.startswith(f"Error: {run / 'results.json'} cannot be used: it is a folder, not a regular file;")


def test_unreadable_results_json(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    real = Path.read_text

    def denied(self, *args, **kwargs):
        if self.name == "results.json":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", denied)
    line = refused(vpeval("report", run))
    assert line == f"Error: {run / 'results.json'} cannot be read (permission denied); make it readable for your user."


@pytest.mark.parametrize(
    "content, expected",
    [
        ("data: [unclosed", "is not valid YAML (expected ',' or ']'"),
        ("- a list\n", "holds a list, not the mapping"),
        ("anonymizers: [{chain: []}]\n", "anonymizers[0] has no `label`"),
        ("attackers: [{label: a, use: 5}]\n", "attackers[0].use is 5 (a number), not text"),
    ],
    ids=["invalid", "a list", "no label", "number as plugin"],
)
def test_broken_resolved_yaml(tmp_path, content, expected):
    run = good_run(tmp_path / "run")
    (run / "resolved.yaml").write_text(content)
    for options in ([], ["--format", "csv"]):
        line = refused(vpeval("report", run, *options))
        assert line.startswith(f"Error: {run / 'resolved.yaml'}") and expected in line, line


def test_missing_files_and_folders(tmp_path):
    run = good_run(tmp_path / "run")
    (run / "resolved.yaml").unlink()
    assert "has results.json but no resolved.yaml" in refused(vpeval("report", run))
    (run / "results.json").unlink()
    assert (
        refused(vpeval("report", run))
        == f"Error: {run} has no results.json; pass run folders written by `vpeval --experiment`."
    )
    assert "does not exist" in refused(vpeval("report", tmp_path / "nowhere"))


def test_a_good_run_still_reports(tmp_path):
    run = good_run(tmp_path / "run")
    for options in ([], ["--format", "md"]):
        result = vpeval("report", run, *options)
        assert result.exit_code == 0, result.output
        assert "31.50" in result.output


def test_runs_without_rows_are_refused_for_a_paper_table(tmp_path):
    run = good_run(tmp_path / "run", rows=[])
    assert "hold no results" in refused(vpeval("report", run, "--format", "md"))


# -- the --output file -------------------------------------------------------------------------------


def test_output_refuses_an_existing_file_unless_overwrite(tmp_path):
    run = good_run(tmp_path / "run")
    mine = tmp_path / "notes.md"
    mine.write_text("my own notes\n")
    line = refused(vpeval("report", run, "--output", mine))
    assert line == f"Error: --output {mine} already exists; choose another file, or pass --overwrite to replace it."
    assert mine.read_text() == "my own notes\n"
    result = vpeval("report", run, "--output", mine, "--overwrite")
    assert result.exit_code == 0 and "31.50" in mine.read_text()


def test_output_is_written_whole_with_the_usual_permissions(tmp_path):
    run = good_run(tmp_path / "run")
    out = tmp_path / "new.md"
    result = vpeval("report", run, "--output", out)
    assert result.exit_code == 0, result.output
    assert out.read_text() == vpeval("report", run).stdout
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.md", "run"]


def test_output_in_a_missing_folder_is_refused_before_any_work(tmp_path):
    run = good_run(tmp_path / "run")
    assert "the folder" in refused(vpeval("report", run, "--output", tmp_path / "no" / "r.md"))


# -- unknown names -----------------------------------------------------------------------------------


def test_plugins_refuses_an_unknown_kind():
    line = refused(vpeval("plugins", "--kind", "bogus"))
    assert line.startswith("Error: Unknown plugin kind 'bogus'; the kinds are: anonymizer, attacker")
    assert "did you mean 'anonymizer'?" in refused(vpeval("plugins", "--kind", "anonymizr"))
    assert vpeval("plugins", "--kind", "metric").exit_code == 0


def test_describe_refuses_an_unknown_kind_with_a_suggestion():
    assert "did you mean 'attacker'?" in refused(vpeval("describe", "atacker", "x"))
    assert "Unknown plugin kind 'bogus'" in refused(vpeval("describe", "bogus", "x"))


def test_report_suggests_coordinates_and_metrics(tmp_path):
    run = good_run(tmp_path / "run")
    line = refused(vpeval("report", run, "--rows", "anonymiser"))
    assert "--rows anonymiser: not a result coordinate; did you mean 'anonymizer'?" in line
    assert "--columns bogus: not a result coordinate; the coordinates are: run, anonymizer" in refused(
        vpeval("report", run, "--columns", "bogus")
    )
    assert "did you mean 'eer'?" in refused(vpeval("report", run, "--metric", "eerr"))


def test_metrics_refuses_an_unknown_metric(tmp_path):
    scores = tmp_path / "s.txt"
    scores.write_text("a b 0.9 target\na c 0.1 nontarget\n")
    assert "No metric plugin named 'bogus'" in refused(vpeval("metrics", "--scores", scores, "--metric", "bogus"))
