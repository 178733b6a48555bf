"""The command line: exit codes, error sentences, listing, describing, reports, scaffolding."""

import csv
import json
import os
import subprocess
import sys

from click.testing import CliRunner

from vpeval.cli import main
from vpeval.testing.dummies import make_corpus

BAD = """\
name: bad
data:
  corpus: {use: fake-corpus}
anonymizers: [fake-shift]
attackers:
  - {use: fake-spectrun}
metrics: [fake-eer]
"""


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_validate_misspelled_plugin_exit_2_no_traceback(tmp_path, fake_plugins):
    path = tmp_path / "exp.yaml"
    path.write_text(BAD)
    for args in (["validate", str(path)], ["--experiment", str(path)]):
        result = invoke(*args)
        assert result.exit_code == 2
        assert f"{path}, line 6 (attackers[0].use)" in result.output
        assert "did you mean 'fake-spectrum'" in result.output
        assert "Traceback" not in result.output


def test_validate_wrong_type(tmp_path, fake_plugins):
    path = tmp_path / "exp.yaml"
    path.write_text(BAD.replace("{use: fake-spectrun}", "{use: fake-spectrum, params: {bands: many}}"))
    result = invoke("validate", str(path))
    assert result.exit_code == 2 and "line 6 (attackers[0].params.bands)" in result.output


def test_validate_good_file(tmp_path, fake_plugins):
    path = tmp_path / "exp.yaml"
    path.write_text(BAD.replace("fake-spectrun", "fake-spectrum"))
    result = invoke("validate", str(path))
    assert result.exit_code == 0 and "is valid" in result.output


def test_missing_experiment_file(tmp_path):
    result = invoke("validate", str(tmp_path / "nope.yaml"))
    assert result.exit_code == 2 and "does not exist" in result.output


def test_plugins_json_lists_builtins_and_fakes(fake_plugins):
    data = json.loads(invoke("plugins", "--json").output)
    names = {(p["kind"], p["name"], p["distribution"]) for p in data["plugins"]}
    assert ("corpus", "manifest", "vpeval") in names
    assert ("attacker", "fake-spectrum", "vpeval-fakes") in names
    table = invoke("plugins", "--kind", "attacker").output
    assert "fake-spectrum" in table and "manifest" not in table


def test_describe_shows_parameters_and_defaults(fake_plugins):
    out = invoke("describe", "anonymizer", "fake-shift").output
    assert "low" in out and "1.3" in out and "Moves pitch" in out
    result = invoke("describe", "anonymizer", "fake-shfit")
    assert result.exit_code == 2 and "did you mean 'fake-shift'" in result.output


def test_describe_lists_a_literal_parameters_choices_and_fits_the_width():
    from vpeval.describe import describe_plugin

    out = describe_plugin("anonymizer", "asr-tts", width=72)
    assert 'gender: one of "random", "f", "m" = "random"' in out
    assert max(len(line) for line in out.splitlines()) <= 72


def test_plugins_table_fits_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "90")
    out = invoke("plugins").output
    assert "asr-tts" in out and max(len(line) for line in out.splitlines()) <= 90


def test_report_across_runs(tmp_path, fake_plugins):
    from tests_runner_helpers import run_small

    run_small(tmp_path / "a", seed=1)
    run_small(tmp_path / "b", seed=2)
    result = invoke("report", str(tmp_path / "a" / "run"), str(tmp_path / "b" / "run"))
    assert result.exit_code == 0
    assert "| run |" in result.output and "small-1" in result.output and "small-2" in result.output
    assert invoke("report", str(tmp_path)).exit_code == 2


def test_new_plugin_packages_install_and_run_in_an_experiment(tmp_path):
    """Scaffold a plugin of every kind, pip-install them, see them listed, run an experiment with three of
    them, and pass every kind's contract suite."""
    from vpeval.api import KINDS

    names = {"anonymizer": "myanon", "attacker": "myatt", "metric": "mymet"}
    names |= {kind: f"my{kind}" for kind in KINDS if kind not in names}
    for kind, name in names.items():
        result = invoke("new-plugin", kind, name, "--dir", str(tmp_path / "src"))
        assert result.exit_code == 0, result.output
        declared = (tmp_path / "src" / name / "pyproject.toml").read_text()
        assert '"numpy>=' in declared and '"pydantic>=' in declared, "the method imports both"
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
        + [str(tmp_path / "src" / n) for n in names.values()],
        check=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    vpeval = [sys.executable, "-m", "vpeval.cli"]
    listed = json.loads(
        subprocess.run(vpeval + ["plugins", "--json"], env=env, capture_output=True, text=True, check=True).stdout
    )
    found = {(p["kind"], p["name"], p["distribution"]) for p in listed["plugins"]}
    assert not listed["broken"], listed["broken"]
    assert {(kind, name, f"vpeval-{name}") for kind, name in names.items()} <= found
    assert {
        ("anonymizer", "myanon", "vpeval-myanon"),
        ("attacker", "myatt", "vpeval-myatt"),
        ("metric", "mymet", "vpeval-mymet"),
    } <= found

    corpus = make_corpus(tmp_path / "audio", speakers=8, utterances=4, seconds=0.5)
    with open(tmp_path / "manifest.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender"])
        for u in corpus:
            writer.writerow([u.path, u.speaker, u.gender])
    (tmp_path / "exp.yaml").write_text(f"""\
name: scaffolded
data:
  corpus: {{use: manifest, params: {{path: {tmp_path / "manifest.csv"}}}}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [myanon]
attackers: [myatt]
metrics: [mymet]
""")
    run = subprocess.run(
        vpeval
        + [
            "--experiment",
            str(tmp_path / "exp.yaml"),
            "--cache",
            str(tmp_path / "cache"),
            "-q",
            "--output",
            str(tmp_path / "run"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    assert {(r["anonymizer"], r["protocol"]) for r in rows} >= {("myanon", "O-O"), ("myanon", "O-A"), ("myanon", "A-A")}

    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path / "src")],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_metrics_on_a_score_file(tmp_path):
    import numpy as np

    rng = np.random.default_rng(0)
    lines = []
    for i in range(400):
        target = i % 4 == 0
        gender = "f" if (i // 4) % 2 else "m"
        lines.append(
            f"spk{i % 20} utt{i} {rng.normal() + 2.0 * target:.4f} {'target' if target else 'nontarget'} {gender}"
        )
    path = tmp_path / "scores.txt"
    path.write_text("\n".join(lines) + "\n")
    result = invoke("metrics", "--scores", str(path), "--metric", "eer-step", "--metric", "min-cllr", "--json")
    assert result.exit_code == 0, result.output
    assert "eer-step" in result.output and "min-cllr" in result.output
    path.write_text("spk1 utt1 0.5 maybe\n")
    bad = invoke("metrics", "--scores", str(path))
    assert bad.exit_code == 2 and f"{path}:1" in bad.output


def test_python_dash_m_runs_the_same_command_line():
    done = subprocess.run([sys.executable, "-m", "vpeval", "--version"], capture_output=True, text=True, check=True)
    assert "version" in done.stdout
