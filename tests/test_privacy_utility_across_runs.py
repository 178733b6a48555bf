"""scripts/privacy_utility_figure.py on two tiny runs (seed 003's Figure 6 over a baselines run and a proposed-systems
run): the plotted points and the CSV are the runs' own numbers, a system in both runs is drawn once, and a folder
or run that cannot give the figure is refused in one sentence with exit code 2."""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from vpeval import hookimpl
from vpeval.api import Metric, MetricInputs
from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner
from vpeval.types import MetricResult

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("privacy_utility_figure", ROOT / "scripts" / "privacy_utility_figure.py")
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)

RUN = """\
name: {name}
seed: 3
data:
  corpus: {{use: fake-corpus, params: {{speakers: 16, utterances: 5}}}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 4
  nontarget_trials_per_speaker: 4
anonymizers:
{anonymizers}
attackers:
  - {{use: fake-spectrum, label: asv_eval, train_on: original}}
  - {{use: fake-spectrum, label: asv_anon, train_on: anonymized}}
protocols: [O-O, A-A]
metrics: [fake-eer, fake-utility]
"""
B1 = "  - {use: fake-shift, label: B1}"
B2 = "  - {use: fake-shift, label: B2, params: {low: 1.05, high: 1.1}}"
OH = "  - {use: fake-shift, label: OH, params: {low: 1.8, high: 2.0}}"


class FakeUtility(Metric):
    """Stands in for WER and UAR: the mean log-spectral distance (dB) of each utterance to its original as "wer",
    and 100 minus it as "uar"; 0 and 100 for the original speech."""

    name = "fake-utility"
    needs = "speech"

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        out = [
            MetricResult("wer", 0.0, "all", unit="%", details={"speech": "original"}),
            MetricResult("uar", 100.0, "all", unit="%", details={"speech": "original"}),
        ]
        if inputs.anonymized is not None:
            from fakes import log_spectral_distances

            distances = log_spectral_distances(inputs)
            d = float(np.mean(distances))
            out += [
                MetricResult("wer", d, "all", unit="%", details={"speech": "anonymized"}),
                MetricResult("uar", 100.0 - d, "all", unit="%", details={"speech": "anonymized"}),
            ]
        return out


class UtilityPlugins:
    @hookimpl
    def register_metrics(self, register):
        register(FakeUtility)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import fakes

    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    plugin = UtilityPlugins()
    manager.register_module(plugin, "vpeval-utility-fakes", "1.0", name="vpeval-utility-fakes")
    tmp = tmp_path_factory.mktemp("across")
    try:
        folders = []
        for name, systems in (("baselines", [B1, B2]), ("proposed", [B2, OH])):
            exp = load_experiment_text(RUN.format(name=name, anonymizers="\n".join(systems)), f"{name}.yaml")
            folders.append(Runner(exp, cache_root=tmp / "cache", output=tmp / name, quiet=True).run().folder)
    finally:
        manager.unregister_module(plugin)
        manager.unregister_module(fakes)
    return folders


def rows_of(folder: Path) -> list[dict]:
    return json.loads((folder / "results.json").read_text())["rows"]


def value(rows, metric, anonymizer, protocol="", attacker=""):
    """The run's pooled value (female/male average where there is one), looked up by hand."""
    found = {
        r["gender"]: r["value"]
        for r in rows
        if r["metric"] == metric
        and r["anonymizer"] == anonymizer
        and r["protocol"] == protocol
        and r["attacker"] == attacker
        and r.get("dataset") is None
    }
    return found.get("avg", found.get("all"))


def figure(runs, tmp_path, *extra):
    args = [*map(str, runs), "--out", str(tmp_path / "fig"), "--group", "baselines", "--group", "proposed"]
    return script.main(args + ["--attacker", "asv_anon", "--original-attacker", "asv_eval", *extra])


def test_the_plotted_points_are_the_runs_numbers(runs, tmp_path, monkeypatch, capsys):
    from matplotlib.axes import Axes

    drawn = []
    errorbar = Axes.errorbar

    def spy(self, x, y, *args, **kwargs):
        drawn.append((self, kwargs.get("fmt"), x, y))  # the panel is titled after its points
        return errorbar(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", spy)
    assert figure(runs, tmp_path) == 0
    out = capsys.readouterr().out
    with open(tmp_path / "fig" / "privacy-utility.csv", newline="") as handle:
        table = list(csv.DictReader(handle))
    baselines, proposed = rows_of(runs[0]), rows_of(runs[1])
    assert [(r["x_metric"], r["system"], r["group"]) for r in table] == [
        (m, s, g)
        for m in ("wer", "uar")
        for s, g in (("original", "original"), ("B1", "baselines"), ("B2", "baselines"), ("OH", "proposed"))
    ]
    for r in table:
        source = baselines if r["group"] in ("original", "baselines") else proposed
        assert r["run"] == str(runs[0] if source is baselines else runs[1])
        assert float(r["x"]) == value(source, r["x_metric"], r["system"])
        if r["system"] == "original":  # the original speech: O-O by the pretrained attacker
            assert (r["protocol"], r["attacker"]) == ("O-O", "asv_eval")
            assert float(r["y"]) == value(source, "fake-eer", "B1", "O-O", "asv_eval")
        else:
            assert (r["protocol"], r["attacker"]) == ("A-A", "asv_anon")
            assert float(r["y"]) == value(source, "fake-eer", r["system"], "A-A", "asv_anon")
    # what matplotlib drew is the CSV: same points, each run's marker (baselines triangles, proposed stars)
    marker = {"original": "o", "baselines": "^", "proposed": "*"}
    assert [(ax.get_title(), *rest) for ax, *rest in drawn] == [
        (f"fake-eer against {r['x_metric']}", marker[r["group"]], float(r["x"]), float(r["y"])) for r in table
    ]
    assert len({(r["x"], r["y"]) for r in table if r["system"] != "original"}) == 6  # not one point drawn twice
    # B2 and the original speech are in both runs: drawn once, from the first, and said so
    assert f"B2 is in {runs[0]} and {runs[1]}: drawn from {runs[0]} (the same values)" in out
    assert f"original is in {runs[0]} and {runs[1]}: drawn from {runs[0]}" in out
    for suffix, magic in ((".png", b"\x89PNG"), (".pdf", b"%PDF-")):
        assert (tmp_path / "fig" / f"privacy-utility{suffix}").read_bytes().startswith(magic)


def test_a_folder_without_results_is_refused(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert figure([runs[0], empty], tmp_path) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"Error: {empty} has no results.json; pass run folders written by `vpeval --experiment`."
    assert not (tmp_path / "fig" / "privacy-utility.png").exists()


def test_a_run_without_a_utility_metric_is_refused(runs, tmp_path, capsys):
    broken = tmp_path / "no-uar"
    shutil.copytree(runs[1], broken)
    payload = json.loads((broken / "results.json").read_text())
    payload["rows"] = [r for r in payload["rows"] if r["metric"] != "uar"]
    (broken / "results.json").write_text(json.dumps(payload))
    assert figure([runs[0], broken], tmp_path) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"Error: {broken}/results.json has no uar rows: the figure plots fake-eer against wer, uar")
    assert err.count(". ") == 0 and err.endswith(").")


def test_several_attackers_need_one_chosen(runs, tmp_path, capsys):
    assert script.main([*map(str, runs), "--out", str(tmp_path / "fig")]) == 2
    err = capsys.readouterr().err.strip()
    assert "several fake-eer rows of A-A per system (one per attacker): choose one attacker with --attacker" in err


def test_an_attacker_trained_per_system_gives_no_original_point(runs, tmp_path, capsys):
    edited = tmp_path / "edited"
    shutil.copytree(runs[0], edited)
    payload = json.loads((edited / "results.json").read_text())
    for r in payload["rows"]:  # an attacker trained on each system's speech: its O-O differs by system
        if (r["anonymizer"], r["attacker"], r["protocol"]) == ("B2", "asv_anon", "O-O"):
            r["value"] += 1.0
    (edited / "results.json").write_text(json.dumps(payload))
    assert script.main([str(edited), "--out", str(tmp_path / "fig"), "--attacker", "asv_anon"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the O-O fake-eer of attacker asv_anon differs between systems" in err
    assert err.endswith("name a pretrained attacker with --original-attacker.")


def test_a_system_left_out_is_not_drawn_and_said(runs, tmp_path, capsys):
    assert figure(runs, tmp_path, "--leave-out", "OH") == 0
    assert f"OH of {runs[1]} is left out (--leave-out)" in capsys.readouterr().out
    with open(tmp_path / "fig" / "privacy-utility.csv", newline="") as handle:
        assert {r["system"] for r in csv.DictReader(handle)} == {"original", "B1", "B2"}


def test_a_utility_metrics_rows_per_set_are_not_plotted(runs, tmp_path):
    """wer and uar with `sets` add a row per set (details.dataset) beside the pooled one: the pooled is plotted."""
    with_sets = tmp_path / "with-sets"
    shutil.copytree(runs[0], with_sets)
    payload = json.loads((with_sets / "results.json").read_text())
    pooled = next(r for r in payload["rows"] if r["metric"] == "wer" and r["anonymizer"] == "B1")
    per_set = {**pooled, "value": pooled["value"] + 50.0, "details": {"dataset": "libri_dev", "class": "libri_dev"}}
    payload["rows"] = [per_set, *payload["rows"]]
    (with_sets / "results.json").write_text(json.dumps(payload))
    assert figure([with_sets, runs[1]], tmp_path) == 0
    with open(tmp_path / "fig" / "privacy-utility.csv", newline="") as handle:
        (b1,) = [r for r in csv.DictReader(handle) if r["system"] == "B1" and r["x_metric"] == "wer"]
    assert float(b1["x"]) == pooled["value"]
