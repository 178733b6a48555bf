"""Readable markdown tables from result rows (shared by report.md and `vpeval report`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any



# Details that say which row of a multi-row speech metric this is (shown in the "setting" column).
SETTING_KEYS = ("system", "protocol", "matrix", "class")


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
    """One table per metric (and N): systems down, protocols across.

    A cell shows the female/male average (as VPAC ranks) with its confidence interval and the two
    genders beside it; without gender labels, the pooled value. results.csv has every gender row.
    """
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if not r.get("protocol"):
            continue
        groups[(r["metric"], _variant(r), r.get("n"))].append(r)
    out = []
    for (metric, variant, n), items in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0)):
        unit = items[0].get("unit") or ""
        protocols = sorted({r["protocol"] for r in items}, key=lambda p: ("O-O", "O-A", "A-A").index(p) if p in ("O-O", "O-A", "A-A") else 9)
        by_cell: dict[tuple, dict[str, dict]] = defaultdict(dict)
        row_keys = []
        for r in items:
            key = ((r.get(extra_key, ""),) if extra_key else ()) + (r["anonymizer"], r["attacker"], r["scenario"])
            row_keys.append(key)
            by_cell[(key, r["protocol"])][r["gender"]] = r
        header = ([extra_key] if extra_key else []) + ["anonymizer", "attacker", "trained on"] + protocols
        body = [list(k) + [_cell(by_cell.get((k, p), {})) for p in protocols] for k in dict.fromkeys(row_keys)]
        title = f"### {metric}{' (' + variant + ')' if variant else ''}, N = {n}{' [' + unit + ']' if unit else ''}"
        out.append(title + "\n\n" + markdown_table(header, body))
    return out


def _cell(genders: dict[str, dict]) -> str:
    main = genders.get("avg") or genders.get("all")
    if main is None:
        return ""
    text = fmt_value(main)
    if "f" in genders and "m" in genders:
        text += f" (f {genders['f']['value']:.2f}, m {genders['m']['value']:.2f})" if genders["f"]["value"] is not None and genders["m"]["value"] is not None else ""
    return text


def speech_tables(rows: list[dict[str, Any]], extra_key: str | None = None) -> list[str]:
    """Utility metrics (WER, UAR, pitch correlation, GVD ...): one table per metric, then what produced it."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("protocol"):
            continue
        groups[r["metric"]].append(r)
    out = []
    for metric, items in sorted(groups.items()):
        unit = items[0].get("unit") or ""
        header = ([extra_key] if extra_key else []) + ["speech", "attacker", "setting", "gender", "value"]
        body = []
        produced_by: list[str] = []
        for r in items:
            details = r.get("details") or {}
            for key in ("asr", "evaluator"):
                if details.get(key):
                    produced_by.append(f"{key}: {details[key]}")
            setting = ", ".join(f"{k} {details[k]}" for k in SETTING_KEYS if k in details)
            body.append(([str(r.get(extra_key, ""))] if extra_key else []) + [r["anonymizer"], r.get("attacker") or "", setting, r["gender"], fmt_value(r)])
        header, body = drop_empty_columns(header, body, ("attacker", "setting"))
        text = f"### {metric}{' [' + unit + ']' if unit else ''}\n\n" + markdown_table(header, body)
        for r in items:  # a metric may render its own table (for example seed 003's Table 6)
            if isinstance((r.get("details") or {}).get("table"), str):
                text += "\n\n" + r["details"]["table"].strip()
        if produced_by:
            text += "\n\n" + "\n".join(f"Produced by {p.rstrip('.')}." for p in dict.fromkeys(produced_by))
        out.append(text)
    return out


def drop_empty_columns(header: list[str], body: list[list[str]], optional: tuple[str, ...]):
    """Leave out the optional columns no row fills (a speech metric without attackers or settings)."""
    keep = [i for i, name in enumerate(header) if name not in optional or any(row[i] for row in body)]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in body]
