"""What the installed report plugins add to the core's reporting: the experiment's declared `report:` section,
figure kinds beyond the DET curves, and tables across run folders (`vpeval report --format`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vpeval.api import Report, ReportSections
from vpeval.errors import PluginError
from vpeval.registry import get_plugin_manager


def report_plugins() -> list[Report]:
    """An instance of every installed report plugin, in name order."""
    manager = get_plugin_manager()
    return [manager.get("report", name)() for name in manager.names("report")]


def declared_sections(spec, rows: list[dict[str, Any]], figures_out: Path, caption) -> ReportSections:
    """The experiment's `report:` section (tables, curves, findings) as the installed report plugins compute it."""
    sections = ReportSections()
    if spec is None or not (spec.tables or spec.curves or spec.findings):
        return sections
    plugins = report_plugins()
    for plugin in plugins:
        part = plugin.declared(spec, rows, figures_out, caption)
        for name, items in vars(part or ReportSections()).items():
            getattr(sections, name).extend(items)
    if not plugins:
        sections.notes.append(
            "The `report:` section's tables, curves and findings are not computed: no report plugin is installed "
            "(`vpeval plugins --kind report` lists them)."
        )
    return sections


def run_outputs(exp, rows: list[dict[str, Any]]) -> ReportSections:
    """The files and report.md blocks every installed report plugin adds to this run (Report.run_outputs)."""
    outputs = ReportSections()
    for plugin in report_plugins():
        part = plugin.run_outputs(exp, rows) or ReportSections()
        outputs.files += part.files
        outputs.tables += part.tables
    return outputs


def plugin_table(folders: list[Path], fmt: str, options: dict[str, Any]) -> str:
    """One table across run folders (`vpeval report --format`), drawn by the first report plugin that draws it."""
    plugins = report_plugins()
    for plugin in plugins:
        text = plugin.table(folders, fmt, options)
        if text is not None:
            return text
    raise PluginError(
        "vpeval report --format/--metric/--rows/--columns/--best needs a report plugin that draws tables, and "
        f"{'none of the installed ones does' if plugins else 'none is installed'} "
        "(`vpeval plugins --kind report` lists them); without these options, vpeval report prints every table."
    )
