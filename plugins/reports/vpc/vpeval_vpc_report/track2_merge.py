"""One set of VPC 2026 Track 2 results files from several vpeval runs, as 02_run_track2.sh joins eval_pre and the
four eval_post runs: `python -m vpeval_vpc_report.track2_merge RUN_en RUN_de RUN_fr RUN_es --output DIR`.

experiments/vpc2026-track2.yaml evaluates one language per run (its semi-informed attacker trains on that
language's folder); each run folder already holds its language's files. This reads each run's resolved.yaml and
results.json, names each run's semi-informed attacker for its language (asv_anon -> asv_anon_de) and writes the
files of all of them together (track2.py), the toolkit's row numbers counting every language.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml

from vpeval_vpc_report.track2 import track2_summaries


class MergeError(Exception):
    """Bad input: main prints the sentence on stderr and exits with status 2, as vpeval's user errors do."""


def read_run(folder: Path) -> tuple[Any, list[dict[str, Any]]]:
    """A run folder's experiment (the parts track2.py reads) and result rows."""
    resolved, results = folder / "resolved.yaml", folder / "results.json"
    for path in (resolved, results):
        if not path.is_file():
            raise MergeError(f"{path} does not exist; give run folders of experiments/vpc2026-track2.yaml.")
    spec = yaml.safe_load(resolved.read_text(encoding="utf-8"))
    exp = SimpleNamespace(
        corpus=SimpleNamespace(params=spec["data"]["corpus"]["params"]),
        anonymizers=[
            SimpleNamespace(label=a["label"], steps=[SimpleNamespace(params=s["params"]) for s in a["chain"]])
            for a in spec["anonymizers"]
        ],
        attackers=[
            SimpleNamespace(label=a["label"], train_on=a["train_on"], plugin=SimpleNamespace(params=a["params"]))
            for a in spec["attackers"]
        ],
    )
    return exp, json.loads(results.read_text(encoding="utf-8"))["rows"]


def merge(runs: list[tuple[Any, list[dict[str, Any]]]]) -> tuple[Any, list[dict[str, Any]]]:
    """The runs as one: each semi-informed attacker's rows named `<label>_<lang>` by their set's language (a
    language in two runs is refused), the emotion rows of the first run that has them (every run scores the
    same emodata sets)."""
    rows: list[dict[str, Any]] = []
    attackers: dict[str, Any] = {}
    languages: dict[str, int] = {}
    uar_from = None
    for n, (exp, run_rows) in enumerate(runs):
        semi = {a.label: a for a in exp.attackers if a.train_on == "anonymized"}
        for r in run_rows:
            if r.get("metric") == "uar":
                uar_from = n if uar_from is None else uar_from
                if uar_from != n:
                    continue
            lang = (r.get("dataset") or "").split("_")[0]
            if r.get("metric") == "eer" and lang:
                if languages.setdefault(lang, n) != n:
                    raise MergeError(
                        f"Runs {languages[lang] + 1} and {n + 1} both evaluate {lang}; give one per language."
                    )
                if r.get("attacker") in semi:
                    label = f"{r['attacker']}_{lang}"
                    attackers[label] = SimpleNamespace(label=label, plugin=semi[r["attacker"]].plugin)
                    r = {**r, "attacker": label}
            rows.append(r)
    first = runs[0][0]
    plain = [a for a in first.attackers if a.train_on != "anonymized"]
    return SimpleNamespace(
        corpus=first.corpus, anonymizers=first.anonymizers, attackers=plain + list(attackers.values())
    ), rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m vpeval_vpc_report.track2_merge", description=__doc__.split("\n")[0]
    )
    parser.add_argument("runs", nargs="+", type=Path, help="run folders of experiments/vpc2026-track2.yaml")
    parser.add_argument("--output", type=Path, required=True, help="folder for results_summary/ (made if missing)")
    args = parser.parse_args(argv)
    try:
        exp, rows = merge([read_run(folder) for folder in args.runs])
    except MergeError as error:
        print(error, file=sys.stderr)
        raise SystemExit(2) from None
    files = track2_summaries(exp, rows, datetime.today().strftime("%d-%m-%y_%H:%M"))
    for path, text in files.items():
        target = args.output / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(target)


if __name__ == "__main__":
    main()
