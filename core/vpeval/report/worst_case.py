"""The worst case at a glance: per anonymizer, protocol and N, the strongest attacker of the run.

A privacy claim is only as good as the strongest attacker, so for each anonymizer this finds the lowest
EER over all attackers (and who reached it) and, beside it, the highest linkability (and who reached it).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from vpeval.report.select import (
    ANONYMIZED_PROTOCOLS,
    eer_metric,
    first_setting,
    headline,
    pooled,
    protocol_sort_key,
)
from vpeval.report.tables import fmt_value, markdown_table
from vpeval.report.training import MARK, UNDER_TRAINED, is_flagged, reason_for

LINKABILITY = "linkability"


@dataclass
class WorstCase:
    anonymizer: str
    protocol: str
    n: int | None
    eer: dict[str, Any]  # the row with the lowest EER
    linkability: dict[str, Any] | None  # the row with the highest linkability, if the run computed it


def worst_cases(rows: list[dict[str, Any]]) -> tuple[list[WorstCase], str, str]:
    """Worst cases on the protocols that hear anonymized speech, the EER metric used and a note on which
    of its entries was kept (empty when the run computed it one way)."""
    metric = eer_metric(rows)
    if metric is None:
        return [], "", ""
    chosen = headline(
        [r for r in pooled(rows) if r.get("protocol") in ANONYMIZED_PROTOCOLS and r.get("value") is not None]
    )
    eers, note = first_setting([r for r in chosen if r["metric"] == metric])
    links, _ = first_setting([r for r in chosen if r["metric"] == LINKABILITY])
    by_cell: dict[tuple, list[dict]] = defaultdict(list)
    for r in eers:
        by_cell[(r["anonymizer"], r["protocol"], r.get("n"))].append(r)
    link_cell: dict[tuple, list[dict]] = defaultdict(list)
    for r in links:
        link_cell[(r["anonymizer"], r["protocol"], r.get("n"))].append(r)
    out = []
    for (anonymizer, protocol, n), items in by_cell.items():
        # Ties go to the first attacker in the run's order, so the table is stable.
        lowest = min(items, key=lambda r: r["value"])
        linked = link_cell.get((anonymizer, protocol, n))
        out.append(
            WorstCase(anonymizer, protocol, n, lowest, max(linked, key=lambda r: r["value"]) if linked else None)
        )
    order = list(dict.fromkeys(r["anonymizer"] for r in eers))
    out.sort(key=lambda w: (order.index(w.anonymizer), protocol_sort_key(w.protocol), w.n or 0))
    return out, metric, note


def worst_case_tables(rows: list[dict[str, Any]], caption=None, marks: set | dict | None = None) -> list[str]:
    """One markdown table per anonymizer; `caption(anonymizer, attackers, protocols, ns)` adds the line
    saying what produced it. `marks`: (attacker, system it trained on) -> why its figures are upper bounds
    (vpeval.report.training.upper_bound_reasons; a set: under-trained), marked where they reach the worst case."""
    marks = marks if isinstance(marks, dict) else dict.fromkeys(marks or (), UNDER_TRAINED)
    cases, metric, note = worst_cases(rows)
    tables = []
    for anonymizer in dict.fromkeys(w.anonymizer for w in cases):
        mine = [w for w in cases if w.anonymizer == anonymizer]
        has_link = any(w.linkability for w in mine)
        header = ["protocol", "N", f"lowest {metric}", "reached by"] + (
            ["highest linkability", "reached by"] if has_link else []
        )
        body, marked = [], {}
        for w in mine:
            attacker = w.eer["attacker"]
            if is_flagged(marks, attacker, anonymizer):
                marked[attacker] = reason_for(marks, attacker, anonymizer)
                attacker += " " + MARK
            cells = [w.protocol, str(w.n) if w.n is not None else "", fmt_value(w.eer), attacker]
            if has_link:
                cells += [fmt_value(w.linkability), w.linkability["attacker"]] if w.linkability else ["", ""]
            body.append(cells)
        unit, links = mine[0].eer.get("unit") or "", any(w.linkability for w in cases)
        lowest = f"lowest {metric}{' [' + unit + ']' if unit else ''}{', highest linkability' if links else ''}"
        text = (  # what the tables mark, said once, under the first
            ""
            if tables
            else f"Each row names the strongest attacker of this run ({lowest}{', ' + note if note else ''}): the "
            "worst case for privacy, which a privacy claim must hold against. O-O, the reference, is not compared.\n\n"
        )
        text = f"### Worst case for {anonymizer}\n\n{text}" + markdown_table(header, body)
        for attacker, reason in marked.items():
            text += f"\n\n{MARK} {attacker} {reason}."
        if caption is not None:
            attackers = [w.eer["attacker"] for w in mine] + [w.linkability["attacker"] for w in mine if w.linkability]
            text += "\n\n" + caption(anonymizer, attackers, [w.protocol for w in mine], [w.n for w in mine])
        tables.append(text)
    return tables
