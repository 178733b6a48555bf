"""Issue 37, item 5: the demo's report.md fits a few screens (at most a third of the 638 lines it had) and loses
nothing required: every drop and doubt, the worst case per anonymizer, every result the tables showed.

The report is rendered by today's writer (scripts/render_run_report.py) from the demo run kept in
docs/results/demo.run (results.json, resolved.yaml of `bash scripts/demo.sh`). That folder keeps no score files,
so each score set of the run gets a small stand-in file: the figures drawn from them are as many as the run's,
which is what the length counts, and their curves are not looked at.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from vpeval.report.doubts import drops_and_doubts
from vpeval.report.figures import SCORE_INDEX
from vpeval.report.tables import _variant, fmt_value
from vpeval.report.worst_case import worst_cases

ROOT = Path(__file__).resolve().parent.parent
DEMO_RUN = ROOT / "docs" / "results" / "demo.run"
LINES_BEFORE = 638  # the demo's report.md when issue 37 was filed
pytest.importorskip("matplotlib")


def render_run_report():
    spec = importlib.util.spec_from_file_location("render_run_report", ROOT / "scripts" / "render_run_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stand_in_scores(folder: Path, rows: list[dict]) -> None:
    """scores/ with one small Kaldi score file per (anonymizer, attacker, protocol, N) the run scored."""
    sets = {
        (r["anonymizer"], r["attacker"], r["scenario"], r["protocol"], r["n"]) for r in rows if r["metric"] == "eer"
    }
    rng = np.random.default_rng(0)
    (folder / "scores").mkdir()
    index = []
    for i, (anonymizer, attacker, scenario, protocol, n) in enumerate(sorted(sets)):
        targets = [True, False] * 10
        lines = [
            f"e{k} t{k} {rng.normal(1.0 if t else 0.0):.4f} {'target' if t else 'nontarget'}"
            for k, t in enumerate(targets)
        ]
        (folder / "scores" / f"set{i}.scores").write_text("\n".join(lines) + "\n")
        index.append({"file": f"set{i}.scores", "anonymizer": anonymizer, "attacker": attacker, "scenario": scenario,
                      "protocol": protocol, "n": n})  # fmt: skip
    (folder / "scores" / SCORE_INDEX).write_text(json.dumps(index))


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> tuple[str, dict]:
    folder = tmp_path_factory.mktemp("demo")
    for name in ("results.json", "resolved.yaml"):
        shutil.copy2(DEMO_RUN / name, folder / name)
    payload = json.loads((folder / "results.json").read_text())
    stand_in_scores(folder, payload["rows"])
    report, provenance = render_run_report().render(folder)
    assert "## Stage timings (s)" in provenance or "| stage | seconds |" in provenance
    return report, payload


def blocks(report: str) -> dict[str, str]:
    """Each `### ` heading of the report -> the text under it, up to the next heading."""
    parts = re.split(r"^(#{2,3} .*)$", report, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def cells(block: str, first: list[str]) -> dict[str, str] | None:
    """The table row of `block` whose first cells are `first`, as header -> cell; None when there is none."""
    table = [line for line in block.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    for line in table[1:]:
        row = [c.strip() for c in line.strip("|").split("|")]
        if row[: len(first)] == first:
            return dict(zip(header, row))
    return None


def test_the_demo_report_is_at_most_a_third_of_what_it_was(demo_report):
    report, _ = demo_report
    assert len(report.splitlines()) <= LINES_BEFORE // 3, len(report.splitlines())


def test_results_and_warnings_come_first_and_every_drop_and_doubt_is_there(demo_report):
    report, payload = demo_report
    doubts = drops_and_doubts(payload)
    assert doubts and all(f"- {line}" in report for line in doubts)
    order = ["## Drops and doubts", "## Worst case at a glance", "## Privacy (attacker) metrics", "## Training curves"]
    assert [report.index(h) for h in order] == sorted(report.index(h) for h in order)
    assert "[provenance.md](provenance.md)" in report and "Stage timings" not in report


def test_the_worst_case_of_each_anonymizer_is_there(demo_report):
    report, payload = demo_report
    cases, _, _ = worst_cases(payload["rows"])
    assert len(cases) == 8  # 2 anonymizers x O-A, A-A x N = 1, 3
    found = blocks(report)
    for case in cases:
        row = cells(found[f"### Worst case for {case.anonymizer}"], [case.protocol, str(case.n)])
        assert row is not None and row["lowest eer"] == fmt_value(case.eer), case
        assert row["reached by"] == case.eer["attacker"]


def test_every_result_the_tables_showed_is_in_its_cell(demo_report):
    """Every privacy figure (the female/male average with its interval, the two genders beside it) in its
    metric's table, row and column; every WER and UAR row; every epoch of every training curve."""
    report, payload = demo_report
    found, rows = blocks(report), payload["rows"]
    by_key = {(r["metric"], _variant(r), r["anonymizer"], r["attacker"], r["protocol"], r["n"], r["gender"]): r
              for r in rows if r["protocol"]}  # fmt: skip
    checked = 0
    for (metric, variant, anonymizer, attacker, protocol, n, gender), r in by_key.items():
        if gender != "avg":
            continue
        title = f"### {metric}" + (f" ({variant})" if variant else "")
        (heading,) = [h for h in found if h == title or h.startswith(title + " [")]
        trained = "pretrained" if attacker in payload["pretrained"] else r["scenario"]
        cell = cells(found[heading], [anonymizer, attacker, trained])[f"{protocol}, N = {n}"]
        f, m = (by_key[(metric, variant, anonymizer, attacker, protocol, n, g)]["value"] for g in ("f", "m"))
        assert cell == f"{fmt_value(r)} (f {f:.2f}, m {m:.2f})", (heading, anonymizer, attacker, protocol, n)
        checked += 1
    assert checked == 6 * 8 * 6  # six tables (min-dcf twice) x 8 rows x 6 columns
    for r in (r for r in rows if not r["protocol"]):
        heading = next(h for h in found if h.startswith(f"### {r['metric']} "))
        assert cells(found[heading], [r["anonymizer"], r["gender"]])["value"] == fmt_value(r), r
    curves = found["## Training curves"]
    for entry in payload["training"]:
        row = cells(curves, [entry["attacker"], entry["trained_on"] or "original"])
        eers = [f"{100 * e['validation_eer']:.2f}" for e in entry["epochs"]]
        assert row["validation EER [%]"].replace("*", "").split(", ") == eers
        assert len(row["loss"].split(", ")) == len(entry["epochs"])
