"""What the experiment's `report:` section asks for, computed from the run's result rows.

Tables reuse the paper-table builder (`vpeval report --format`), curves the shared figure module, and each finding
becomes a verdict with the values that decide it. A value is the headline one (the female/male average
where the metric gives one, else pooled), unless a selection names `gender`. Nothing here stops a run:
a table or curve that the results cannot fill becomes one sentence in the report instead.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vpeval.api import ReportSections
from vpeval.errors import ConfigError
from vpeval.names import file_name
from vpeval.report.figures import Figure, available
from vpeval.report.select import coordinate, first_setting, headline, pooled
from vpeval.report_spec import CurveSpec, Delta, FindingSpec, ReportSpec, TableSpec
from vpeval_paper_report.figures import Curve, curve_figure
from vpeval_paper_report.tables import build_table, render_markdown


def matches(row: dict[str, Any], where: dict[str, list[str]]) -> bool:
    return all(coordinate(row, dim) in values for dim, values in where.items())


def metric_rows(
    rows: list[dict[str, Any]], metric: str, where: dict[str, list[str]], dims: tuple[str, ...] = ()
) -> tuple[list[dict[str, Any]], str]:
    """The rows of `metric` that `where` selects, one per result (headline gender unless `where` names one,
    one metric entry and variant when the run computed several), and a note naming the entry kept.

    Per-dataset rows only where `where` or the table's `dims` name `dataset`; otherwise the pooled ones (a VPC
    set's rows, and a speech metric's rows per set of its `sets` / spk2fold files, details.dataset, left out)."""
    if "dataset" not in where and "dataset" not in dims:
        rows = [r for r in pooled(rows) if not (r.get("details") or {}).get("dataset")]
    chosen = [r for r in rows if r.get("metric") == metric and r.get("value") is not None and matches(r, where)]
    if "gender" not in where:
        chosen = headline(chosen)
    return first_setting(chosen)


# -- tables -------------------------------------------------------------------------------------------


def table_markdown(spec: TableSpec, rows: list[dict[str, Any]], caption) -> str:
    """The declared table in Markdown under its title, or one sentence saying why the results cannot fill it."""
    chosen, note = metric_rows(rows, spec.metric, spec.where, (*spec.rows, *spec.columns))
    head = f"### {spec.title}\n\n"
    if not chosen:
        return head + f"Not filled: no {spec.metric} results match {_describe(spec.where) or 'this run'}."
    try:
        table = build_table(chosen, spec.metric, list(spec.rows), list(spec.columns), direction=spec.best)
    except ConfigError as exc:  # e.g. several values per cell: said in the report, the run's results stay
        return head + f"Not filled: {exc}".replace("--rows/--columns: ", "").replace(
            "--rows or --columns", "rows or columns (or narrow `where`)"
        )
    values = list(table.cells.values())
    body = render_markdown(table).split("\n", 2)[2]  # our title replaces the builder's `### metric [unit]` heading
    head = f"### {spec.title}" + (f" [{table.unit}]" if table.unit and table.unit not in spec.title else "") + "\n\n"
    text = (
        body
        + "\n"
        + caption(
            anonymizers=[r.get("anonymizer") for r in values],
            attackers=[r.get("attacker") for r in values],
            protocols=[r.get("protocol") for r in values],
            n=[r.get("n") for r in values],
            metric=spec.metric,
        )
    )
    return head + text + (f" Kept: {note}." if note else "")


def _describe(where: dict[str, list[str]]) -> str:
    return ", ".join(f"{dim} {' or '.join(values)}" for dim, values in where.items())


# -- curves -------------------------------------------------------------------------------------------


def curve_figures(specs: list[CurveSpec], rows: list[dict[str, Any]], out: Path) -> tuple[list[Figure], list[str]]:
    """The declared curves as figures in `out`, and a sentence for each one the results cannot draw."""
    figures, notes = [], []
    if specs and not available():
        return [], ["Declared curves are not drawn, because matplotlib is not installed (pip install 'vpeval[plots]')."]
    for k, spec in enumerate(specs):
        try:
            slug = re.sub(r"[^a-z0-9]+", "-", spec.title.lower()).strip("-")[:60]
            figures.append(_curve(spec, rows, out, f"curve-{k + 1}__{slug}"))
        except ValueError as exc:
            notes.append(f"{spec.title}: not drawn: {exc}")
    return figures, notes


def _x_value(spec: CurveSpec, row: dict[str, Any]) -> float | None:
    value = coordinate(row, spec.x_dim)
    if isinstance(spec.x, str):
        try:
            return float(value)
        except ValueError:
            return None
    return spec.x[spec.x_dim].get(value)


def _curve(spec: CurveSpec, rows: list[dict[str, Any]], out: Path, name: str) -> Figure:
    chosen, note = metric_rows(rows, spec.metric, spec.where)
    points = [(x, r) for r in chosen if (x := _x_value(spec, r)) is not None]
    if not points:
        raise ValueError(
            f"no {spec.metric} results match {_describe(spec.where) or 'the run'} at the swept {spec.x_dim} values"
        )
    lines: dict[tuple[str, str], list[tuple[float, dict]]] = defaultdict(list)
    for x, r in points:
        lines[(coordinate(r, spec.panels) if spec.panels else "", coordinate(r, spec.series))].append((x, r))
    panels: dict[str, list[Curve]] = {}
    for (panel, series), line in lines.items():
        xs = [x for x, _ in line]
        if len(set(xs)) < len(xs):
            clash = sorted(
                {
                    d
                    for _, r in line
                    for d in ("anonymizer", "attacker", "scenario", "protocol", "n")
                    if d not in (spec.series, spec.panels, spec.x_dim) and len({coordinate(o, d) for _, o in line}) > 1
                }
            )
            raise ValueError(
                f"the line {series or spec.metric} has several values per x that differ in "
                f"{', '.join(clash) or 'a setting'}; narrow `where`"
            )
        line.sort(key=lambda p: p[0])
        interval = all(r.get("ci_low") is not None and r.get("ci_high") is not None for _, r in line)
        panels.setdefault(panel or spec.metric, []).append(
            Curve(
                series or spec.metric,
                [x for x, _ in line],
                [r["value"] for _, r in line],
                [r["ci_low"] for _, r in line] if interval else None,
                [r["ci_high"] for _, r in line] if interval else None,
            )
        )
    unit = points[0][1].get("unit") or ""
    xs = sorted({x for x, _ in points})
    png, pdf = curve_figure(
        panels,
        out,
        file_name(name),
        title=spec.title,
        xlabel=spec.xlabel or spec.x_dim,
        ylabel=f"{spec.metric} ({unit})" if unit else spec.metric,
        xticks=xs,
        xscale=spec.xscale,
    )
    used = [r for _, r in points]
    return Figure(
        png,
        pdf,
        spec.title,
        list(dict.fromkeys(r["anonymizer"] for r in used if r.get("anonymizer"))),
        list(dict.fromkeys(r["attacker"] for r in used if r.get("attacker"))),
        list(dict.fromkeys(r["protocol"] for r in used if r.get("protocol"))),
        sorted({int(r["n"]) for r in used if r.get("n") is not None}),
        note,
    )


# -- findings -----------------------------------------------------------------------------------------


@dataclass
class GroupCheck:
    group: dict[str, str]
    left: float | None
    right: float | None
    holds: bool | None  # None: a side had no values in this group
    left_rows: list[dict[str, Any]] = field(default_factory=list)
    right_rows: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class FindingResult:
    spec: FindingSpec
    groups: list[GroupCheck]
    note: str = ""  # why nothing was measured, when the run has no values of the metric

    @property
    def verdict(self) -> str:
        measured = [g for g in self.groups if g.holds is not None]
        if not measured:
            return "NOT MEASURED"
        return "HOLDS" if all(g.holds for g in measured) else "DOES NOT HOLD"

    def to_json(self) -> dict[str, Any]:
        return {
            "claim": self.spec.claim,
            "metric": self.spec.metric,
            "op": self.spec.op,
            "verdict": self.verdict,
            "note": self.note,
            "groups": [{"group": g.group, "left": g.left, "right": g.right, "holds": g.holds} for g in self.groups],
        }


def check_findings(specs: list[FindingSpec], rows: list[dict[str, Any]]) -> list[FindingResult]:
    return [check_finding(spec, rows) for spec in specs]


def check_finding(spec: FindingSpec, rows: list[dict[str, Any]]) -> FindingResult:
    chosen, _ = metric_rows(rows, spec.metric, spec.where)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in chosen:
        groups[tuple(coordinate(r, d) for d in spec.per)].append(r)
    note = ""
    if not groups:
        groups[tuple("" for _ in spec.per)] = []
        names = sorted({str(r.get("metric")) for r in rows if r.get("value") is not None})
        note = f"no {spec.metric} values match; the run's metrics are {', '.join(names) or 'none'}"
    checks = []
    for key, members in groups.items():
        left, left_rows = _side(spec.left, members)
        right, right_rows = _side(spec.right, members)
        holds = None if left is None or right is None else _compare(left, spec.op, right, spec.tolerance)
        checks.append(GroupCheck(dict(zip(spec.per, key)), left, right, holds, left_rows, right_rows))
    return FindingResult(spec, checks, note)


def _side(side, rows: list[dict[str, Any]]) -> tuple[float | None, list[dict[str, Any]]]:
    if isinstance(side, Delta):
        (a, a_rows), (b, b_rows) = (_mean(rows, w) for w in side.delta)
        return (None if a is None or b is None else a - b), a_rows + b_rows
    return _mean(rows, side)


def _mean(rows: list[dict[str, Any]], where: dict[str, list[str]]) -> tuple[float | None, list[dict[str, Any]]]:
    mine = [r for r in rows if matches(r, where)]
    if not mine:
        return None, []
    return sum(float(r["value"]) for r in mine) / len(mine), mine


EQUAL_WITHIN = 1e-9  # means of the same results summed in another order differ in the last bits: equal, not larger


def _compare(left: float, op: str, right: float, tolerance: float) -> bool:
    if op == "~":
        return abs(left - right) <= tolerance + EQUAL_WITHIN
    if abs(left - right) <= EQUAL_WITHIN * max(1.0, abs(left), abs(right)):
        return op in ("<=", ">=")
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]


def findings_markdown(results: list[FindingResult]) -> list[str]:
    """One block per finding: the claim and its verdict, then a table of the values that decide it."""
    out = []
    for res in results:
        spec = res.spec
        measured = [g for g in res.groups if g.holds is not None]
        count = f" (in {sum(bool(g.holds) for g in measured)} of {len(measured)} groups)" if len(measured) > 1 else ""
        lines = [
            f"**{spec.claim}**: {res.verdict}{count}" + (f" ({res.note})" if res.note else "") + ".",
            "",
            f"Checked: {spec.metric} of {_side_text(spec.left)} {spec.op} {_side_text(spec.right)}"
            + (f" (tolerance {spec.tolerance:g})" if spec.op == "~" else "")
            + (f", where {_describe(spec.where)}" if spec.where else "")
            + "; each side is the mean of the results it selects.",
            "",
        ]
        header = [*spec.per, "left", "right", "holds"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for g in res.groups:
            verdict = "n/a (no values)" if g.holds is None else ("yes" if g.holds else "no")
            lines.append(
                "| "
                + " | ".join(
                    [
                        *(g.group[d] or "-" for d in spec.per),
                        _value(g.left, g.left_rows, spec.left),
                        _value(g.right, g.right_rows, spec.right),
                        verdict,
                    ]
                )
                + " |"
            )
        out.append("\n".join(lines))
    return out


def _side_text(side) -> str:
    if isinstance(side, Delta):
        return f"({_describe(side.delta[0])}) minus ({_describe(side.delta[1])})"
    return f"({_describe(side) or 'all'})"


def _value(value: float | None, rows: list[dict[str, Any]], side) -> str:
    if value is None:
        return "-"
    text = f"{value:.2f}"
    if (
        not isinstance(side, Delta)
        and len(rows) == 1
        and rows[0].get("ci_low") is not None
        and rows[0].get("ci_high") is not None
    ):
        text += f" [{rows[0]['ci_low']:.2f}, {rows[0]['ci_high']:.2f}]"
    elif isinstance(side, Delta):
        text += f" (difference of two means over {len(rows)} results)"
    elif len(rows) > 1:
        text += f" (mean of {len(rows)})"
    return text


# -- the report's sections ----------------------------------------------------------------------------


def build(spec: ReportSpec, rows: list[dict[str, Any]], figures_out: Path, caption) -> ReportSections:
    tables = [table_markdown(t, rows, caption) for t in spec.tables]
    figures, notes = curve_figures(spec.curves, rows, figures_out)
    findings = check_findings(spec.findings, rows)
    return ReportSections([f.to_json() for f in findings], findings_markdown(findings), tables, figures, notes)
