"""`vpeval report RUN... --format md|csv|latex`: seed-paper layout across runs, best per column, LaTeX that compiles."""

import csv
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vpeval.cli import main
from vpeval_paper_report.tables import latex_escape

ANONYMIZERS = ("mc_adams 50%", "pool#vc & co")  # LaTeX specials in labels must come out escaped


def write_run(folder: Path, name: str, eers: dict[tuple[str, str, str], float], ci: float = 2.0) -> Path:
    rows = []
    for (anonymizer, attacker, protocol), value in eers.items():
        for n in (1, 3):
            v = value - 5.0 * (n == 3)
            rows.append(
                {
                    "anonymizer": anonymizer,
                    "attacker": attacker,
                    "scenario": "original",
                    "protocol": protocol,
                    "n": n,
                    "metric": "eer",
                    "metric_plugin": "eer",
                    "gender": "all",
                    "value": v,
                    "ci_low": v - ci,
                    "ci_high": v + ci,
                    "unit": "%",
                    "details": {"variant": "step"},
                }
            )
    rows.append(
        {
            "anonymizer": "original",
            "attacker": "",
            "scenario": "",
            "protocol": "",
            "n": None,
            "metric": "wer",
            "metric_plugin": "wer",
            "gender": "all",
            "value": 20.0,
            "ci_low": None,
            "ci_high": None,
            "unit": "%",
            "details": {},
        }
    )
    for anonymizer, value in zip(ANONYMIZERS, (60.0, 45.0)):
        rows.append(
            {
                "anonymizer": anonymizer,
                "attacker": "",
                "scenario": "",
                "protocol": "",
                "n": None,
                "metric": "wer",
                "metric_plugin": "wer",
                "gender": "all",
                "value": value,
                "ci_low": None,
                "ci_high": None,
                "unit": "%",
                "details": {},
            }
        )
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(
        json.dumps(
            {"experiment": name, "corpus": {"evaluation_speakers": 20}, "trials": {"1": 400, "3": 400}, "rows": rows}
        )
    )
    (folder / "resolved.yaml").write_text(
        yaml.safe_dump(
            {
                "data": {"corpus": {"use": "synth", "distribution": "vpeval-synth", "version": "0.1.0"}},
                "anonymizers": [{"label": a, "chain": [{"use": "mcadams"}]} for a in ANONYMIZERS],
                "attackers": [{"label": "ge2e", "use": "ge2e", "train_on": "original"}],
            }
        )
    )
    return folder


@pytest.fixture
def runs(tmp_path):
    first = write_run(
        tmp_path / "a",
        "demo",
        {
            (ANONYMIZERS[0], "ge2e", "O-A"): 40.0,
            (ANONYMIZERS[1], "ge2e", "O-A"): 30.0,
            (ANONYMIZERS[0], "ge2e", "A-A"): 20.0,
            (ANONYMIZERS[1], "ge2e", "A-A"): 25.0,
        },
    )
    second = write_run(
        tmp_path / "b",
        "demo_v2",
        {
            (ANONYMIZERS[0], "ge2e", "O-A"): 35.0,
            (ANONYMIZERS[1], "ge2e", "O-A"): 38.0,
            (ANONYMIZERS[0], "ge2e", "A-A"): 22.0,
            (ANONYMIZERS[1], "ge2e", "A-A"): 21.0,
        },
    )
    return [str(first), str(second)]


def report(*args):
    result = CliRunner().invoke(main, ["report", *args])
    return result.exit_code, result.output


def test_markdown_runs_side_by_side_with_the_best_value_per_column_in_bold(runs):
    code, text = report(*runs, "--format", "md", "--rows", "anonymizer,n", "--columns", "run,protocol")
    assert code == 0, text
    assert "| anonymizer | N | demo / O-A | demo / A-A | demo_v2 / O-A | demo_v2 / A-A |" in text
    # EER: higher is better for the anonymizer; per column the higher of the two anonymizers is bold, with its interval.
    assert (
        "| mc_adams 50% | 1 | **40.00** [38.00, 42.00] | 20.00 [18.00, 22.00] | 35.00 [33.00, 37.00] | "
        "**22.00** [20.00, 24.00] |" in text
    )
    assert (
        "| pool#vc & co | 1 | 30.00 [28.00, 32.00] | **25.00** [23.00, 27.00] | **38.00** [36.00, 40.00] | "
        "21.00 [19.00, 23.00] |" in text
    )
    assert "attacker ge2e" in text and "rows: systems" in text
    # One line says what bold means; N = 1 and N = 3 rows never compete (N = 3, O-A: 35 beats 25).
    assert "\n\nBold marks the best system (higher eer is more private), per column and N.\n" in text
    assert "| mc_adams 50% | 3 | **35.00** [33.00, 37.00] |" in text


def test_best_can_be_the_lowest_and_the_metric_chosen(runs):
    code, text = report(*runs, "--metric", "wer", "--columns", "run")
    assert code == 0, text
    # WER: lower is better; original speech is the reference, never the best system (it has the lowest WER).
    assert "| original (reference) | 20.00 | 20.00 |" in text
    assert "| pool#vc & co | **45.00** | **45.00** |" in text
    assert "original speech and O-O are references, never compared" in text
    code, text = report(*runs, "--rows", "anonymizer,n", "--columns", "protocol,run", "--best", "lower")
    assert "| mc_adams 50% | 1 | 40.00 [38.00, 42.00] | **35.00** [33.00, 37.00] |" in text
    assert "| pool#vc & co | 3 | **25.00** [23.00, 27.00] | 33.00 [31.00, 35.00] |" in text
    assert "Bold marks the lowest eer (as --best asked), per column and N." in text


def attacker_run(folder: Path) -> Path:
    """One system, three attackers (ge2e strongest on A-A, ecapa on O-A) and their O-O references."""
    run = write_run(folder, "attacks", {})
    results = json.loads((run / "results.json").read_text())
    values = {"ge2e": (5.0, 30.0, 10.0), "ecapa": (2.0, 20.0, 15.0), "probe": (9.0, 45.0, 40.0)}
    results["rows"] = [
        {"anonymizer": ANONYMIZERS[0], "attacker": attacker, "scenario": "original", "protocol": protocol, "n": 1,
         "metric": "eer", "metric_plugin": "eer", "gender": "all", "value": v, "ci_low": None, "ci_high": None,
         "unit": "%", "details": {}}
        for attacker, triple in values.items()
        for protocol, v in zip(("O-O", "O-A", "A-A"), triple)
    ]  # fmt: skip
    (run / "results.json").write_text(json.dumps(results))
    return run


def test_attacker_rows_mark_the_strongest_attacker_as_the_worst_case_in_every_format(tmp_path):
    run = str(attacker_run(tmp_path / "attacks"))
    code, text = report(run, "--rows", "attacker", "--columns", "protocol")
    assert code == 0, text
    # The lowest EER per column is the worst case for privacy; O-O is the reference and never marked.
    assert "| ge2e | 5.00 | 30.00 | **10.00** |" in text and "| ecapa | 2.00 | **20.00** | 15.00 |" in text
    assert "| probe | 9.00 | 45.00 | 40.00 |" in text and "rows: attackers" in text
    assert "Bold marks the strongest attacker (lowest eer): the worst case for privacy, per column;" in text
    code, text = report(run, "--rows", "attacker", "--columns", "protocol", "--format", "csv")
    table = list(csv.reader(io.StringIO(text)))
    assert table[0][-1] == "role" and {r[-1] for r in table[1:-1]} == {"attacker"}
    assert table[-1][0].startswith("marked: the strongest attacker (lowest eer): the worst case for privacy")
    assert table[-1][1:4] == ["", "ecapa", "ge2e"]
    code, text = report(run, "--rows", "attacker", "--columns", "protocol", "--format", "latex")
    assert "Bold marks the strongest attacker (lowest eer): the worst case for privacy" in text
    assert "ge2e & 5.00 & 30.00 & \\textbf{10.00} \\\\" in text


def test_csv_has_numbers_intervals_and_a_best_row(runs):
    code, text = report(*runs, "--format", "csv", "--rows", "anonymizer,n", "--columns", "run,protocol")
    assert code == 0, text
    table = list(csv.reader(io.StringIO(text)))
    header = table[0]
    assert header[:4] == ["anonymizer", "n", "demo / O-A", "demo / O-A ci_low"]
    first = dict(zip(header, table[1]))
    assert float(first["demo / O-A"]) == 40.0 and float(first["demo / O-A ci_high"]) == 42.0
    best = dict(zip(header, table[-1]))
    assert best["anonymizer"] == "marked: the best system (higher eer is more private), per column and N"
    assert best["demo / O-A"] == "mc_adams 50% / 1; mc_adams 50% / 3"
    assert best["demo_v2 / O-A"] == "pool#vc & co / 1; pool#vc & co / 3" and best["demo / O-A ci_low"] == ""
    assert first["role"] == "system"


def latex_rows(text: str) -> list[str]:
    body = text.split("\\toprule")[1].split("\\bottomrule")[0]
    return [line for line in body.splitlines() if line.strip().endswith("\\\\")]


def check_latex_structure(text: str) -> None:
    assert text.count("{") == text.count("}"), "braces balanced"
    (spec,) = re.findall(r"\\begin\{tabular\}\{([lcr]+)\}", text)
    for line in latex_rows(text):
        cells = line.rstrip("\\ ").split(" & ")
        width = sum(int(m) for m in re.findall(r"\\multicolumn\{(\d+)\}", line)) + sum(
            "\\multicolumn" not in c for c in cells
        )
        assert width == len(spec), line
    for special in "%&#_":
        assert (
            re.search(rf"(?<!\\){re.escape(special)}", text.split("\\begin{table}")[1].replace(" & ", " ")) is None
        ), special
    for word in (
        "\\toprule",
        "\\midrule",
        "\\bottomrule",
        "\\cmidrule(lr){3-4}",
        "\\cmidrule(lr){5-6}",
        "\\end{table}",
    ):
        assert word in text


def test_latex_is_booktabs_with_escaped_labels_and_bold_best(runs):
    code, text = report(*runs, "--format", "latex", "--rows", "anonymizer,n", "--columns", "run,protocol")
    assert code == 0, text
    check_latex_structure(text)
    assert "\\multicolumn{2}{c}{demo}" in text and "\\multicolumn{2}{c}{demo\\_v2}" in text
    assert "mc\\_adams 50\\% & 1 & \\textbf{40.00} {\\scriptsize [38.00, 42.00]}" in text
    assert "pool\\#vc \\& co" in text


def test_latex_escape_covers_every_special():
    assert (
        latex_escape("a_b%c&d#e$f{g}h~i^j\\k")
        == "a\\_b\\%c\\&d\\#e\\$f\\{g\\}h\\textasciitilde{}i\\textasciicircum{}j\\textbackslash{}k"
    )


@pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex is not installed (the structure test still runs)"
)
def test_latex_compiles_as_pasted(runs, tmp_path):
    code, text = report(*runs, "--format", "latex", "--rows", "anonymizer,n", "--columns", "run,protocol")
    assert code == 0
    (tmp_path / "table.tex").write_text(text)
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{booktabs}\n\\begin{document}\n\\input{table.tex}\n\\end{document}\n"
    )
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert (tmp_path / "paper.pdf").stat().st_size > 1000


def test_a_layout_that_would_mix_values_in_a_cell_is_refused_in_one_sentence(runs):
    code, text = report(runs[0], "--rows", "anonymizer", "--columns", "protocol")
    assert code == 2
    assert text.strip() == (
        "Error: --rows/--columns: cells would hold several eer values that differ in n; add n to --rows or --columns."
    )
    code, text = report(runs[0], "--rows", "system")
    assert code == 2 and "--rows system: not a result coordinate" in text
    code, text = report(runs[0], "--metric", "uar")
    assert code == 2 and "no run has values of this metric; the runs have: eer, wer." in text


def test_without_options_the_combined_markdown_report_is_unchanged(runs):
    code, text = report(*runs)
    assert (
        code == 0 and text.startswith("# Results of 2 runs") and "| run | anonymizer | attacker | trained on |" in text
    )
