"""Readable markdown tables from result rows (shared by report.md and `vpeval report`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

GENDER_ORDER = {"f": 0, "m": 1, "avg": 2, "all": 3}


def fmt_value(row: dict[str, Any]) -> str:
    value = row.get("value")
    if value is None:
        return "n/a"
    text = f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.2e}"
    if row.get("ci_low") is not None and row.get("ci_high") is not None:
        text += f" [{row['ci_low']:.2f}, {row['ci_high']:.2f}]"
    return text


def _variant(row: dict[str, Any]) -> str:
    """Rows of one metric that differ by a setting (p_target, speech, class) get their own table."""
    details = row.get("details") or {}
    parts = [f"{k}={details[k]}" for k in ("p_target", "variant") if k in details]
    return ", ".join(parts)


def markdown_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


def attack_tables(rows: list[dict[str, Any]], extra_key: str | None = None) -> list[str]:
    """One table per metric (and N): systems down, protocol x gender across."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if not r.get("protocol"):
            continue
        groups[(r["metric"], _variant(r), r.get("n"))].append(r)
    out = []
    for (metric, variant, n), items in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0)):
        unit = items[0].get("unit") or ""
        cols = sorted({(r["protocol"], r["gender"]) for r in items}, key=lambda c: (c[0], GENDER_ORDER.get(c[1], 9)))
        row_keys = list(dict.fromkeys(
            ((r.get(extra_key, ""),) if extra_key else ()) + (r["anonymizer"], r["attacker"], r["scenario"]) for r in items
        ))
        cells: dict[tuple, str] = {}
        for r in items:
            key = ((r.get(extra_key, ""),) if extra_key else ()) + (r["anonymizer"], r["attacker"], r["scenario"])
            cells[(key, r["protocol"], r["gender"])] = fmt_value(r)
        header = ([extra_key] if extra_key else []) + ["anonymizer", "attacker", "trained on"] + [f"{p} {g}" for p, g in cols]
        body = [list(k) + [cells.get((k, p, g), "") for p, g in cols] for k in row_keys]
        title = f"### {metric}{' (' + variant + ')' if variant else ''}, N = {n}{' [' + unit + ']' if unit else ''}"
        out.append(title + "\n\n" + markdown_table(header, body))
    return out


def speech_tables(rows: list[dict[str, Any]], extra_key: str | None = None) -> list[str]:
    """Utility metrics (WER, UAR, pitch correlation, GVD ...): one table per metric."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("protocol"):
            continue
        groups[r["metric"]].append(r)
    out = []
    for metric, items in sorted(groups.items()):
        unit = items[0].get("unit") or ""
        header = ([extra_key] if extra_key else []) + ["speech", "attacker", "gender", "value", "notes"]
        body = []
        for r in items:
            details = r.get("details") or {}
            notes = "; ".join(f"{k}: {v}" for k, v in details.items() if k in ("asr", "evaluator", "class", "count", "speech"))
            body.append(([str(r.get(extra_key, ""))] if extra_key else []) + [r["anonymizer"], r.get("attacker") or "", r["gender"], fmt_value(r), notes])
        out.append(f"### {metric}{' [' + unit + ']' if unit else ''}\n\n" + markdown_table(header, body))
    return out
