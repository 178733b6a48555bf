"""Readable markdown tables from result rows (shared by report.md and `vpeval report`)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

UPPER_BOUND = "†"  # vpeval.report.training.MARK; not imported, as training's tables import this module

# Details that say which row of a multi-row speech metric this is (shown in the "setting" column).
SETTING_KEYS = ("system", "protocol", "matrix", "class", "split")


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


def attack_tables(
    rows: list[dict[str, Any]], extra_key: str | None = None, caption=None, marks: dict | None = None, pretrained=()
) -> list[str]:
    """One table per metric: systems down, protocols (per N, when several) across; an attacker in `marks`
    (attacker, system) -> reason (vpeval.report.training.upper_bound_reasons) is marked, its figures read as upper
    bounds. Attackers in `pretrained` never trained: their "trained on" says so, not the scenario's speech.

    A cell shows the female/male average (as VPAC ranks) with its confidence interval and the two
    genders beside it; without gender labels, the pooled value. results.csv has every gender row.
    `caption(anonymizers, attackers, protocols, ns)` gives the line under each table saying what produced it.
    """
    groups: dict[tuple, list[dict]] = defaultdict(list)
    rows = [r for r in rows if r.get("protocol")]
    several = _metrics_with_several_labels(rows)
    for r in rows:
        # Two entries of one metric (different parameters, different labels) get a table each, titled by label.
        label = r.get("metric_plugin") or "" if r["metric"] in several else ""
        group = r["gender"] if "=" in str(r.get("gender")) else ""  # a breakdown's attribute=group: a table each
        groups[(r["metric"], ", ".join(filter(None, (_variant(r), group))), label)].append(r)
    out = []
    for (metric, variant, label), items in sorted(groups.items()):
        unit = items[0].get("unit") or ""
        order = ("O-O", "O-A", "A-A")
        protocols = sorted(
            {(r.get("n") or 0, r["protocol"]) for r in items},
            key=lambda c: (c[0], order.index(c[1]) if c[1] in order else 9),
        )
        ns = sorted({n for n, _ in protocols})
        by_cell: dict[tuple, dict[str, dict]] = defaultdict(dict)
        row_keys = []
        # Several evaluation sets: a row per set beside the pooled one ("all"), as VoicePrivacy reports them.
        datasets = any(r.get("dataset") is not None for r in items)
        for r in items:
            trained_on = "pretrained" if r["attacker"] in pretrained else r["scenario"]
            key = ((r.get(extra_key, ""),) if extra_key else ()) + (r["anonymizer"], r["attacker"], trained_on)
            key += (r.get("dataset") or "all",) if datasets else ()
            row_keys.append(key)
            by_cell[(key, (r.get("n") or 0, r["protocol"]))]["all" if "=" in str(r["gender"]) else r["gender"]] = r
        titles = [p if len(ns) == 1 else f"{p}, N = {n}" for n, p in protocols]
        header = ([extra_key] if extra_key else []) + ["anonymizer", "attacker", "trained on"] + titles
        header[len(header) - len(protocols) : len(header) - len(protocols)] = ["dataset"] if datasets else []
        body = [list(k) + [_cell(by_cell.get((k, p), {})) for p in protocols] for k in dict.fromkeys(row_keys)]
        at, notes = (1 if extra_key else 0), {}
        for cells in body:
            keys = ((cells[at + 1], None), (cells[at + 1], cells[at]))  # trained on original speech, or on this system
            reason = "; ".join(filter(None, ((marks or {}).get(k) for k in keys)))
            if reason:
                notes[cells[at + 1]] = reason
                cells[at + 1] += " " + UPPER_BOUND
        title = (
            f"### {metric}{' (' + variant + ')' if variant else ''}{' from ' + label if label else ''}"
            f"{f', N = {ns[0]}' if len(ns) == 1 and ns[0] else ''}{' [' + unit + ']' if unit else ''}"
        )
        text = title + "\n\n" + markdown_table(header, body) + undefined_notes(items)
        text += "".join(
            f"\n\n{UPPER_BOUND} {a} {why}: its figures here are upper bounds on privacy." for a, why in notes.items()
        )
        if caption is not None:
            text += "\n\n" + caption(
                [r["anonymizer"] for r in items], [r["attacker"] for r in items], [p for _, p in protocols], ns
            )
        out.append(text)
    return out


def undefined_notes(items: list[dict[str, Any]], most: int = 5) -> str:
    """Why cells read n/a: the distinct reasons metrics gave in their details (a metric that returns NaN
    says why, for example linkability with under 20 target trials)."""
    reasons = list(
        dict.fromkeys(
            str(r["details"]["reason"])
            for r in items
            if r.get("value") is None and isinstance((r.get("details") or {}).get("reason"), str)
        )
    )
    if not reasons:
        return ""
    more = f" ({len(reasons) - most} more reasons in results.json)" if len(reasons) > most else ""
    return "\n\n" + "\n".join(f"n/a: {why.rstrip('.')}." for why in reasons[:most]) + more


def _metrics_with_several_labels(rows: list[dict[str, Any]]) -> set[str]:
    labels: dict[str, set] = defaultdict(set)
    for r in rows:
        labels[r["metric"]].add(r.get("metric_plugin") or "")
    return {m for m, found in labels.items() if len(found) > 1}


def _cell(genders: dict[str, dict]) -> str:
    main = genders.get("avg") or genders.get("all")
    if main is None:
        return ""
    text = fmt_value(main)
    if "f" in genders and "m" in genders:
        text += (
            f" (f {genders['f']['value']:.2f}, m {genders['m']['value']:.2f})"
            if genders["f"]["value"] is not None and genders["m"]["value"] is not None
            else ""
        )
    return text


def speech_tables(rows: list[dict[str, Any]], extra_key: str | None = None, caption=None) -> list[str]:
    """Utility metrics (WER, UAR, pitch correlation, GVD ...): one table per metric, then what produced it.

    Rows two metric entries computed identically are shown once; when rows of different entries would
    still look alike, a `metric entry` column shows each row's label. `caption(anonymizers, attackers)`
    gives the line saying which data and models produced the table.
    """
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("protocol"):
            continue
        groups[r["metric"]].append(r)
    out = []
    for metric, items in sorted(groups.items()):
        unit = items[0].get("unit") or ""
        header = ([extra_key] if extra_key else []) + [
            "speech",
            "attacker",
            "setting",
            "gender",
            "value",
            "metric entry",
        ]
        body = []
        produced_by: list[str] = []
        for r in items:
            details = r.get("details") or {}
            for key in ("asr", "evaluator"):
                if details.get(key):
                    produced_by.append(f"{key}: {details[key]}")
            setting = ", ".join(f"{k} {details[k]}" for k in SETTING_KEYS if k in details)
            body.append(
                ([str(r.get(extra_key, ""))] if extra_key else [])
                + [
                    r["anonymizer"],
                    r.get("attacker") or "",
                    setting,
                    r["gender"],
                    fmt_value(r),
                    r.get("metric_plugin") or "",
                ]
            )
        body = merge_label_duplicates(body)
        header, body = drop_empty_columns(header, body, ("attacker", "setting", "metric entry"))
        text = f"### {metric}{' [' + unit + ']' if unit else ''}\n\n" + markdown_table(header, body)
        text += "".join("\n\n" + t for t in paper_row_tables(items, extra_key))
        for table in dict.fromkeys(
            r["details"]["table"].strip() for r in items if isinstance((r.get("details") or {}).get("table"), str)
        ):
            text += "\n\n" + table  # a metric may render its own table (for example seed 003's Table 6)
        if produced_by:
            text += "\n\n" + "\n".join(f"Produced by {p.rstrip('.')}." for p in dict.fromkeys(produced_by))
        if caption is not None:
            text += "\n\n" + caption(
                [r["anonymizer"] for r in items if r["anonymizer"] != "original"], [r.get("attacker") for r in items]
            )
        out.append(text)
    return out


def merge_label_duplicates(body: list[list[str]]) -> list[list[str]]:
    """Rows whose cells agree except the last (the metric entry's label) become one row naming every label;
    the label column is blanked when no two remaining rows would look alike without it."""
    merged: dict[tuple, list[str]] = {}
    for cells in body:
        merged.setdefault(tuple(cells[:-1]), []).append(cells[-1])
    rows = [list(cells) + [", ".join(dict.fromkeys(labels))] for cells, labels in merged.items()]
    # Without the value and label, do two rows look alike? Then the label tells them apart.
    keys = [tuple(r[:-2]) for r in rows]
    if len(set(keys)) == len(keys):
        rows = [r[:-1] + [""] for r in rows]
    return rows


def paper_row_tables(items: list[dict[str, Any]], extra_key: str | None) -> list[str]:
    """Tables from the rows a metric lays out as a paper does (details {"columns": [...], "row": [...]}),
    for example the emotion metric's UAR and per-class recalls (seed 003's Table 3): one row per speech."""
    layouts: dict[tuple, list[tuple[dict, list]]] = defaultdict(list)
    for r in items:
        for name, layout in (r.get("details") or {}).items():
            if (
                isinstance(layout, dict)
                and isinstance(layout.get("columns"), list)
                and isinstance(layout.get("row"), list)
            ):
                layouts[(name, tuple(layout["columns"]))].append((r, layout["row"]))
    out = []
    for (name, columns), entries in layouts.items():
        labels = {r.get("metric_plugin") for r, _ in entries}
        header = (
            ([extra_key] if extra_key else [])
            + ["speech"]
            + (["metric entry"] if len(labels) > 1 else [])
            + list(columns)
        )
        body = []
        for r, values in entries:
            cells = ([str(r.get(extra_key, ""))] if extra_key else []) + [r["anonymizer"]]
            cells += [r.get("metric_plugin") or ""] if len(labels) > 1 else []
            body.append(cells + [f"{v:.2f}" if isinstance(v, (int, float)) else str(v) for v in values])
        unit = entries[0][0].get("unit") or ""
        out.append(
            f"{name} layout ({', '.join(columns)}{' in ' + unit if unit else ''}):\n\n" + markdown_table(header, body)
        )
    return out


def drop_empty_columns(header: list[str], body: list[list[str]], optional: tuple[str, ...]):
    """Leave out the optional columns no row fills (a speech metric without attackers or settings)."""
    keep = [i for i, name in enumerate(header) if name not in optional or any(row[i] for row in body)]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in body]
