"""The embedding-tsne report: the metric draws its maps into its own work folder, under the cache, and a cached result
keeps naming those files. This copies every map a run's rows name (PNG, PDF and the CSV of its points) into the run
folder's figures/ as tsne__<metric label>__<system>, where report.md shows them with the run's other figures, and
lists the CSVs (and any map whose files are gone from the cache) in a report.md block of its own."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpeval.api import Report, ReportSections
from vpeval.names import file_name

PREFIX = "tsne__"
FILES = ("figure_png", "figure_pdf", "csv")


@dataclass
class DrawnMap:
    """One figure the metric wrote (the original panel and one system's), as a run's rows name it."""

    label: str  # the metric entry's label (figure4, figure5, ...)
    system: str  # the anonymizer of its second panel ("original" alone in a run without anonymizers)
    embedding: str
    sources: dict[str, Path]  # FILES -> where the metric wrote it

    @property
    def stem(self) -> str:
        return file_name(f"{PREFIX}{self.label}__{self.system}")

    def target(self, key: str) -> str:
        """Its file's name in the run folder's figures/."""
        return f"{self.stem}{dict(figure_png='.png', figure_pdf='.pdf', csv='.csv')[key]}"

    @property
    def title(self) -> str:
        return f"{self.label}: t-SNE of {self.embedding} embeddings, original and {self.system} speech"

    @property
    def missing(self) -> list[Path]:
        return [p for p in self.sources.values() if not p.is_file()]


def drawn_maps(rows: list[dict[str, Any]]) -> list[DrawnMap]:
    """Each map the embedding-tsne rows name, once (the original row names the first system's map)."""
    maps: dict[str, DrawnMap] = {}
    for r in rows:
        details = r.get("details") or {}
        if not str(r.get("metric", "")).startswith("embedding-tsne-") or not all(details.get(k) for k in FILES):
            continue
        key = str(details["figure_png"])
        system = r["anonymizer"]
        if key not in maps or maps[key].system == "original":  # the system's own row names it best
            label = r.get("metric_plugin") or r["metric"]
            sources = {k: Path(details[k]) for k in FILES}
            maps[key] = DrawnMap(label, system, str(details.get("embedding") or ""), sources)
    return list(maps.values())


class TsneFigures(Report):
    """Copies embedding-tsne's maps into the run folder and lists their point files in report.md."""

    name = "embedding-tsne"

    def figures(self, rows: list[dict[str, Any]], out: Path) -> list[Any]:
        from vpeval.report.figures import Figure

        maps = drawn_maps(rows)
        for stale in out.glob(f"{PREFIX}*.csv") if out.is_dir() else []:
            stale.unlink()  # the core clears old PNG and PDF files; a map no longer drawn leaves no CSV either
        figures = []
        for m in maps:
            if m.missing:
                continue  # said in report.md (run_outputs)
            out.mkdir(parents=True, exist_ok=True)
            copied = {k: out / m.target(k) for k in FILES}
            for k, target in copied.items():
                shutil.copyfile(m.sources[k], target)
            figures.append(Figure(copied["figure_png"], copied["figure_pdf"], m.title, [m.system]))
        return figures

    def run_outputs(self, exp: Any, rows: list[dict[str, Any]]) -> ReportSections | None:
        from vpeval.report.figures import FIGURES_DIR

        maps = drawn_maps(rows)
        if not maps:
            return None
        lines = [
            "## t-SNE maps (embedding-tsne)",
            "",
            f"Each map is under Figures; its points (speech, utterance, speaker, emotion, x, y) are in {FIGURES_DIR}/:",
            "",
        ]
        for m in maps:
            if m.missing:
                lines.append(
                    f"- {m.title}: not in this folder, because {m.missing[0]} is gone (its metric's work folder was "
                    "removed from the cache); run the experiment with a fresh VPEVAL_CACHE to draw it again."
                )
            else:
                lines.append(f"- {m.title}: [{m.target('csv')}]({FIGURES_DIR}/{m.target('csv')})")
        return ReportSections(tables=["\n".join(lines)])
