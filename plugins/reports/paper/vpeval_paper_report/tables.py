"""Paper-ready tables across runs (`vpeval report RUN...`): systems down, conditions across, best marked.

One metric per table. Rows and columns are chosen among the result coordinates (DIMENSIONS); by default
the seed papers' layout: anonymizer and attacker down, protocol (and N, and run when there are several)
across. A cell is the headline value (female/male average, else pooled) with its interval where the
metric computed one. What is marked follows from what the rows are (vpeval_paper_report.roles): the best
system among systems, the strongest attacker (the worst case for privacy) among attackers, reference rows never
(bold in Markdown and LaTeX, a closing row in CSV; one line says what the mark means). LaTeX uses booktabs
and escapes its special characters, so it compiles as pasted.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vpeval.errors import ConfigError, DataError, did_you_mean
from vpeval.report.provenance import RunInfo
from vpeval.report.runfolder import load_run
from vpeval.report.select import SETTING_DETAILS, coordinate, eer_metric, headline, protocol_sort_key
from vpeval_paper_report.roles import is_reference, mark, rows_are

DIMENSIONS = ("run", "anonymizer", "attacker", "scenario", "protocol", "n", "gender", "setting", "dataset")
Direction = Literal["higher", "lower", "none"]

# Which value is better for the anonymization system: more privacy (higher EER, Cllr, DCF; lower linkability)
# and more utility (lower WER, higher UAR). Rows of attackers get the opposite end marked (roles.mark); `--best`
# names the end to mark instead; a metric not listed is marked only with --best.
BEST = {
    "eer": "higher",
    "eer-rocch": "higher",
    "eer-step": "higher",
    "cllr": "higher",
    "min-cllr": "higher",
    "min-dcf": "higher",
    "linkability": "lower",
    "zebra": "lower",
    "de-id": "higher",
    "wer": "lower",
    "uar": "higher",
    "pitch-correlation": "higher",
    "embedding-eer": "higher",
    "embedding-uar": "higher",
}


@dataclass
class PaperTable:
    metric: str
    unit: str
    row_dims: list[str]
    col_dims: list[str]
    row_keys: list[tuple]
    col_keys: list[tuple]
    cells: dict[tuple, dict[str, Any]]  # (row key, column key) -> result row
    direction: Direction
    best: set[tuple] = field(default_factory=set)  # (row key, column key) of the marked values
    meaning: str = ""  # one line saying what the mark means
    runs: list[RunInfo] = field(default_factory=list)
    fixed: dict[str, str] = field(
        default_factory=dict
    )  # coordinates with one value in the whole table (said in the caption)

    def has_interval(self, col: tuple | None = None) -> bool:
        return any(
            r.get("ci_low") is not None and r.get("ci_high") is not None
            for (_, c), r in self.cells.items()
            if col is None or c == col
        )


def load_runs(folders: list[Path]) -> tuple[list[dict[str, Any]], list[RunInfo]]:
    """Every result row of the run folders, with a `run` coordinate: the experiment name (the folder's
    name when two runs share one)."""
    loaded = [load_run(f) for f in folders]
    infos = [RunInfo.from_run(run.resolved, run.results) for run in loaded]
    names = [i.name for i in infos]
    rows = []
    for folder, info, run in zip(folders, infos, loaded):
        label = info.name if names.count(info.name) == 1 else Path(folder).name
        info.name = label
        rows += [{**r, "run": label} for r in run.rows]
    return rows, infos


def setting_of(row: dict[str, Any], with_label: bool) -> str:
    details = row.get("details") or {}
    parts = [
        f"{k} {details[k]}"
        for k in SETTING_DETAILS
        if k in details and isinstance(details[k], (str, int, float)) and k not in ("speech", "protocol")
    ]
    if with_label:
        parts.append(str(row.get("metric_plugin") or ""))
    return ", ".join(p for p in parts if p)


def build_table(
    rows: list[dict[str, Any]],
    metric: str | None = None,
    row_dims: list[str] | None = None,
    col_dims: list[str] | None = None,
    direction: Direction | None = None,
    runs: list[RunInfo] = (),
) -> PaperTable:
    metric = metric or eer_metric(rows) or next(iter(sorted({r["metric"] for r in rows})), None)
    chosen = [dict(r) for r in rows if r["metric"] == metric and r.get("value") is not None]
    for r in chosen:  # identification rows name their protocol in details only; without it their cells collide
        if not r.get("protocol") and isinstance((r.get("details") or {}).get("protocol"), str):
            r["protocol"] = r["details"]["protocol"]
    for dims, option in ((row_dims, "--rows"), (col_dims, "--columns")):
        for d in dims or []:
            if d not in DIMENSIONS:
                raise ConfigError(
                    _unknown(f"{option} {d}: not a result coordinate", d, DIMENSIONS, "the coordinates are")
                )
    if not chosen:
        metrics = sorted({r["metric"] for r in rows})
        raise ConfigError(
            _unknown(f"--metric {metric}: no run has values of this metric", str(metric), metrics, "the runs have")
        )
    explicit = row_dims is not None or col_dims is not None
    if "gender" not in (row_dims or []) + (col_dims or []):
        chosen = headline(chosen)
    several_labels = len({r.get("metric_plugin") for r in chosen}) > 1
    for r in chosen:
        r["setting"] = setting_of(r, several_labels)
    varying = [d for d in DIMENSIONS if len({coordinate(r, d) for r in chosen}) > 1]
    if row_dims is None:
        row_dims = [d for d in ("anonymizer", "attacker") if d in varying or d == "anonymizer"]
    if col_dims is None:
        col_dims = [d for d in ("run", "protocol", "n", "setting") if d in varying and d not in row_dims]
    missing = _varying_within_cells(chosen, row_dims + col_dims)
    while missing and not explicit:  # defaults: a coordinate that still varies inside a cell goes down the rows
        row_dims.append(missing[0])
        missing = _varying_within_cells(chosen, row_dims + col_dims)
    if missing:
        raise ConfigError(
            f"--rows/--columns: cells would hold several {metric} values that differ in "
            f"{', '.join(missing)}; add {missing[0]} to --rows or --columns."
        )
    cells: dict[tuple, dict] = {}
    row_keys: list[tuple] = []
    col_keys: list[tuple] = []
    for r in chosen:
        rk, ck = tuple(coordinate(r, d) for d in row_dims), tuple(coordinate(r, d) for d in col_dims)
        row_keys.append(rk)
        col_keys.append(ck)
        cells[(rk, ck)] = r
    first_seen = {d: list(dict.fromkeys(k[i] for k in col_keys)) for i, d in enumerate(col_dims)}
    col_keys = sorted(dict.fromkeys(col_keys), key=lambda k: [_order(d, v, first_seen[d]) for d, v in zip(col_dims, k)])
    override, direction = direction, BEST.get(metric, "none")
    table = PaperTable(
        metric,
        chosen[0].get("unit") or "",
        row_dims,
        col_dims,
        list(dict.fromkeys(row_keys)),
        col_keys,
        cells,
        direction,
        runs=list(runs),
    )
    marking = mark(cells, row_dims, direction, override, metric)
    table.best, table.meaning = marking.cells, marking.meaning
    table.fixed = {
        d: coordinate(chosen[0], d)
        for d in DIMENSIONS
        if d not in row_dims + col_dims and coordinate(chosen[0], d) and len({coordinate(r, d) for r in chosen}) == 1
    }
    return table


def _unknown(sentence: str, word: str, choices, listed: str) -> str:
    hint = did_you_mean(word, choices)
    listing = f"{listed}: {', '.join(choices) or 'none'}."
    return f"{sentence}{hint} {listing[0].upper()}{listing[1:]}" if hint else f"{sentence}; {listing}"


def _varying_within_cells(rows: list[dict[str, Any]], dims: list[str]) -> list[str]:
    """The coordinates that differ between rows which would share a cell."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[tuple(coordinate(r, d) for d in dims)].append(r)
    return [
        d for d in DIMENSIONS if d not in dims and any(len({coordinate(r, d) for r in g}) > 1 for g in groups.values())
    ]


def _order(dim: str, value: str, seen: list[str]):
    if dim == "protocol":
        return protocol_sort_key(value)
    if dim == "n":
        return (int(value) if value.isdigit() else 0, value)
    return (seen.index(value), "")  # runs, settings: in the order the rows came


# -- rendering ----------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.2e}"


def _interval(row: dict[str, Any]) -> str:
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return ""
    return f"[{_number(row['ci_low'])}, {_number(row['ci_high'])}]"


def column_title(dims: list[str], key: tuple) -> str:
    return " / ".join(_dim_value(d, v) for d, v in zip(dims, key)) or "value"


def _dim_value(dim: str, value: str) -> str:
    return f"N = {value}" if dim == "n" else value


def _unit(table: PaperTable) -> str:
    return f" [{table.unit}]" if table.unit else ""


def _legend(table: PaperTable) -> str:
    words = [", ".join(f"N = {v}" if d == "n" else f"{d} {v}" for d, v in table.fixed.items())] if table.fixed else []
    if rows_are(table.row_dims):
        words.append(f"rows: {rows_are(table.row_dims)}")
    if table.has_interval():
        words.append("brackets: confidence intervals")
    return "; ".join(words)


def _row_label(table: PaperTable, rk: tuple) -> list[str]:
    """The row's coordinates as printed; a reference row (original speech, O-O) says it is one."""
    return [f"{v} (reference)" if is_reference({d: v}) else v for d, v in zip(table.row_dims, rk)]


def _row_role(table: PaperTable, rk: tuple) -> str:
    if any(is_reference({d: v}) for d, v in zip(table.row_dims, rk)):
        return "reference"
    return {"systems": "system", "attackers": "attacker", "systems x attackers": "system x attacker"}.get(
        rows_are(table.row_dims), ""
    )


def render_markdown(table: PaperTable) -> str:
    header = [d if d != "n" else "N" for d in table.row_dims] + [
        column_title(table.col_dims, c) for c in table.col_keys
    ]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * len(table.row_dims) + ["---:"] * len(table.col_keys)) + "|",
    ]
    for rk in table.row_keys:
        cells = _row_label(table, rk)
        for ck in table.col_keys:
            r = table.cells.get((rk, ck))
            if r is None:
                cells.append("")
                continue
            value = _number(r["value"])
            value = f"**{value}**" if (rk, ck) in table.best else value
            cells.append(f"{value} {_interval(r)}".strip())
        lines.append("| " + " | ".join(cells) + " |")
    text = f"### {table.metric}{_unit(table)}\n\n" + "\n".join(lines)
    notes = [n for n in [_legend(table)] + [f"{i.name}: {i.data}" for i in table.runs] if n]
    text += "\n\n*" + "; ".join(notes).replace("*", "\\*") + ".*" if notes else ""
    return text + (f"\n\nBold marks {table.meaning}." if table.best else "") + "\n"


def render_csv(table: PaperTable) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header = list(table.row_dims)
    for ck in table.col_keys:
        title = column_title(table.col_dims, ck)
        header += [title] + ([f"{title} ci_low", f"{title} ci_high"] if table.has_interval(ck) else [])
    writer.writerow(header + ["role"])
    for rk in table.row_keys:
        line = list(rk)
        for ck in table.col_keys:
            r = table.cells.get((rk, ck)) or {}
            line.append(_plain(r.get("value")))
            if table.has_interval(ck):
                line += [_plain(r.get("ci_low")), _plain(r.get("ci_high"))]
        writer.writerow(line + [_row_role(table, rk)])
    if table.best:  # one closing row: per column, the row(s) holding a marked value; its first cell says why
        line = [f"marked: {table.meaning}"] + [""] * (len(table.row_dims) - 1)
        for ck in table.col_keys:
            line.append("; ".join(" / ".join(rk) for rk in table.row_keys if (rk, ck) in table.best))
            if table.has_interval(ck):
                line += ["", ""]
        writer.writerow(line)
    return buffer.getvalue()


def _plain(value) -> str:
    return "" if value is None else repr(float(value))


LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}


def latex_escape(text: str) -> str:
    # A line break or other control character (from results written before labels were checked) becomes a
    # space: a blank line inside a tabular row ends the paragraph and stops LaTeX.
    return "".join(LATEX_SPECIALS.get(ch, " " if ch.isspace() or not ch.isprintable() else ch) for ch in str(text))


def render_latex(table: PaperTable) -> str:
    """A booktabs table environment; the preamble needs \\usepackage{booktabs}."""
    nrow, ncol = len(table.row_dims), len(table.col_keys)
    lines = [
        "% vpeval report: needs \\usepackage{booktabs} in the preamble",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{latex_escape(table.metric + _unit(table))}"
        + (f": {latex_escape(_legend(table))}" if _legend(table) else "")
        + (f". Bold marks {latex_escape(table.meaning)}" if table.best else "")
        + ".}",
        f"\\begin{{tabular}}{{{'l' * nrow}{'c' * ncol}}}",
        "\\toprule",
    ]
    # Every column level but the last as spanning headers, a rule under each named span.
    for level in range(len(table.col_dims) - 1):
        spans = _spans([ck[: level + 1] for ck in table.col_keys])
        cells = [""] * nrow + [
            f"\\multicolumn{{{width}}}{{c}}{{{latex_escape(_dim_value(table.col_dims[level], key[-1]))}}}"
            for key, width in spans
        ]
        lines.append(" & ".join(cells) + " \\\\")
        start, rules = nrow + 1, []
        for _key, width in spans:
            rules.append(f"\\cmidrule(lr){{{start}-{start + width - 1}}}")
            start += width
        lines.append(" ".join(rules))
    last = [
        latex_escape(_dim_value(table.col_dims[-1], ck[-1])) if table.col_dims else latex_escape(table.metric)
        for ck in table.col_keys
    ]
    lines.append(" & ".join([latex_escape(d if d != "n" else "N") for d in table.row_dims] + last) + " \\\\")
    lines.append("\\midrule")
    for rk in table.row_keys:
        cells = [latex_escape(v) for v in _row_label(table, rk)]
        for ck in table.col_keys:
            r = table.cells.get((rk, ck))
            if r is None:
                cells.append("--")
                continue
            value = _number(r["value"])
            value = f"\\textbf{{{value}}}" if (rk, ck) in table.best else value
            interval = _interval(r)
            cells.append(value + (f" {{\\scriptsize {interval}}}" if interval else ""))
        lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def _spans(keys: list[tuple]) -> list[tuple[tuple, int]]:
    spans: list[tuple[tuple, int]] = []
    for key in keys:
        if spans and spans[-1][0] == key:
            spans[-1] = (key, spans[-1][1] + 1)
        else:
            spans.append((key, 1))
    return spans


RENDERERS = {"md": render_markdown, "csv": render_csv, "latex": render_latex}


def paper_table(
    folders: list[Path],
    fmt: str = "md",
    metric: str | None = None,
    row_dims: list[str] | None = None,
    col_dims: list[str] | None = None,
    direction: Direction | None = None,
) -> str:
    rows, infos = load_runs([Path(f) for f in folders])
    if not rows:
        raise DataError(
            f"{', '.join(str(f) for f in folders)} hold no results (their results.json has no rows); "
            "run an experiment with metrics first."
        )
    return RENDERERS[fmt](build_table(rows, metric, row_dims, col_dims, direction, infos))
