"""The `vpc` report plugin: for an experiment with `report: {preset: vpc}`, results_vpc.txt, the toolkit's own
results_summary files (2026 Track 2: result_for_rank and its CSVs, track2.py), and the summary in report.md."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vpeval.api import Report, ReportSections
from vpeval_vpc_report.results import embedding_notes, toolkit_summaries, vpc_results_text
from vpeval_vpc_report.track2 import track2_summaries


class VpcReport(Report):
    """The VoicePrivacy challenge's results layout: results_vpc.txt (EER by dataset, split, gender and trial
    condition; WER; UAR) and, per `precomputed` vpc submission, the toolkit's own results_summary files."""

    name = "vpc"

    def run_outputs(self, exp, rows: list[dict[str, Any]]) -> ReportSections | None:
        spec = exp.experiment.report
        if spec is None or spec.preset != "vpc":
            return None
        notes = embedding_notes(exp)  # labelled where a setting changes its numbers (asv_ssl's toolkit-sign)
        summary = vpc_results_text(rows, notes)
        files = [("results_vpc.txt", summary)]
        time = datetime.today().strftime("%d-%m-%y_%H:%M")
        track2 = exp.corpus.params.get("challenge") == "2026-track2"  # its own layout (track2.py)
        files += list((track2_summaries if track2 else toolkit_summaries)(exp, rows, time).items())
        block = "\n".join(
            [
                "## VoicePrivacy results summary",
                "",
                "As the challenge toolkits print it (also in results_vpc.txt):",
                "",
                *(f"- `{label}`: {note} (docs/vpc.md)." for label, note in notes.items()),
                *([""] if notes else []),
                "```",
                summary.rstrip("\n"),
                "```",
            ]
        )
        return ReportSections(files=files, tables=[block])
