"""The `paper` report plugin: what the core asks a report plugin for, answered by this package's modules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vpeval.api import Report, ReportSections
from vpeval_paper_report import declared
from vpeval_paper_report.figures import eer_vs_n_figures, privacy_utility_figure
from vpeval_paper_report.tables import paper_table


class PaperReport(Report):
    """Paper tables, swept curves and checked findings from the experiment's `report:` section; EER against N
    and privacy against utility for every run; one paper-layout table (Markdown, CSV or LaTeX, best value per
    column marked) across run folders."""

    name = "paper"

    def declared(self, spec, rows: list[dict[str, Any]], figures_out: Path, caption) -> ReportSections:
        return declared.build(spec, rows, figures_out, caption)

    def figures(self, rows: list[dict[str, Any]], out: Path) -> list:
        return eer_vs_n_figures(rows, out) + privacy_utility_figure(rows, out)

    def table(self, folders: list[Path], fmt: str, options: dict[str, Any]) -> str:
        return paper_table(folders, fmt, options["metric"], options["rows"], options["columns"], options["best"])
