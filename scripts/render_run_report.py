"""Write a run folder's report.md and provenance.md again with the installed vpeval, from what the run kept.

For a report change, to see it on a finished run without rerunning the experiment: results.json, resolved.yaml
and timings.json give the rows, the experiment and the stage times; scores/ (when present) gives the figures,
which are drawn again into the folder's figures/. The drops and doubts are worked out again from results.json
by today's rules. Nothing else in the folder changes, so render into a copy of a run you want to keep as it is:

    cp -r runs/demo /tmp/demo-copy && python scripts/render_run_report.py /tmp/demo-copy
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import yaml


def render(folder: Path) -> tuple[str, str]:
    """(report.md, provenance.md) of the run in `folder`, as today's writer makes them."""
    from vpeval.config import load_experiment_text
    from vpeval.report.doubts import drops_and_doubts
    from vpeval.report.extensions import declared_sections, run_outputs
    from vpeval.report.figures import FIGURES_DIR, report_figures
    from vpeval.report.provenance import RunInfo
    from vpeval.report.writer import provenance_markdown, report_markdown

    payload = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    resolved_text = (folder / "resolved.yaml").read_text(encoding="utf-8")
    exp = load_experiment_text(resolved_text, str(folder / "resolved.yaml"))
    timings = folder / "timings.json"
    seconds = json.loads(timings.read_text(encoding="utf-8"))["seconds"] if timings.exists() else {}
    result = SimpleNamespace(folder=folder, rows=payload["rows"], timings=seconds)
    payload["drops_and_doubts"] = drops_and_doubts(payload)
    info = RunInfo.from_run(yaml.safe_load(resolved_text), payload)
    figures = report_figures(folder, result.rows) if (folder / "scores").is_dir() else []
    paper = declared_sections(exp.experiment.report, result.rows, folder / FIGURES_DIR, info.caption)
    blocks = run_outputs(exp, result.rows).tables
    report = report_markdown(exp, result, payload, info, figures, paper, blocks)
    return report, provenance_markdown(exp, result, payload, info)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0], "results.json").is_file():
        print(__doc__.strip().splitlines()[0] + "\nusage: python scripts/render_run_report.py RUN_FOLDER")
        return 2
    folder = Path(argv[0])
    report, provenance = render(folder)
    (folder / "report.md").write_text(report, encoding="utf-8")
    (folder / "provenance.md").write_text(provenance, encoding="utf-8")
    print(f"wrote {folder / 'report.md'} ({len(report.splitlines())} lines) and {folder / 'provenance.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
