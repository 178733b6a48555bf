"""Which cells of a paper table are marked, from what its rows are: systems, attackers, or references.

A privacy number means opposite things by role. Among systems, the highest EER is the best system; among
attackers, the lowest EER is the strongest attacker, the worst case for privacy. Reference rows (original
speech, the O-O protocol) show what anonymization starts from, so they never compete. Rows are compared only
with rows that agree on every other row coordinate (an N = 1 row never competes with an N = 3 row).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

REFERENCE_SPEECH = "original"  # the anonymizer label of unanonymized speech (speech metrics' reference rows)
REFERENCE_PROTOCOL = "O-O"  # both sides original: the attacker's skill without anonymization


def is_reference(row: dict[str, Any]) -> bool:
    return row.get("anonymizer") == REFERENCE_SPEECH or row.get("protocol") == REFERENCE_PROTOCOL


def rows_are(row_dims: list[str]) -> str:
    """What a table's rows are: systems, attackers, systems x attackers, or "" (runs, N, settings)."""
    systems, attackers = "anonymizer" in row_dims, "attacker" in row_dims
    if systems and attackers:
        return "systems x attackers"
    return "attackers" if attackers else "systems" if systems else ""


@dataclass
class Marking:
    cells: set[tuple]  # (row key, column key) of the marked values
    meaning: str  # one line saying what the mark means ("" when nothing is marked)


def mark(
    cells: dict[tuple, dict[str, Any]], row_dims: list[str], direction: str, override: str | None, metric: str
) -> Marking:
    """The marked cells and what the mark means. `direction`: which value is better for the anonymization
    system ("higher" EER, "lower" WER, "none"); `override`: `--best` (which value to mark), or None."""
    role = rows_are(row_dims)
    privacy = any(r.get("protocol") for r in cells.values())
    if override is not None:
        pick, meaning = override, f"the {'highest' if override == 'higher' else 'lowest'} {metric} (as --best asked)"
    elif direction == "none" or not role:
        return Marking(set(), "")
    elif role == "systems":
        pick = direction
        better = "more private" if privacy else "better"
        meaning = f"the best system ({'higher' if direction == 'higher' else 'lower'} {metric} is {better})"
    elif not privacy:
        return Marking(set(), "")
    else:  # attackers: the value worst for the system is the strongest attacker's
        pick = "lower" if direction == "higher" else "higher"
        of_each = " of each system" if role == "systems x attackers" else ""
        meaning = (
            f"the strongest attacker{of_each} ({'lowest' if pick == 'lower' else 'highest'} {metric}): "
            "the worst case for privacy"
        )
    if pick == "none":
        return Marking(set(), "")
    # The coordinate whose values compete; rows that differ in any other row coordinate are not compared.
    compared = {"systems": ["anonymizer"], "attackers": ["attacker"], "systems x attackers": ["attacker"]}.get(
        role, list(row_dims)
    )
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for (rk, ck), r in cells.items():
        if is_reference(r):
            continue
        others = tuple(v for d, v in zip(row_dims, rk) if d not in compared)
        groups[(ck, others)].append((r["value"], rk))
    marked = set()
    for (ck, _), values in groups.items():
        if len(values) < 2:
            continue  # one value is not a comparison
        target = max(v for v, _ in values) if pick == "higher" else min(v for v, _ in values)
        marked |= {(rk, ck) for v, rk in values if round(v, 2) == round(target, 2)}  # equal as printed: all marked
    if not marked:
        return Marking(set(), "")
    within = [("N" if d == "n" else d) for d in row_dims if d not in compared]
    where = "per column" + (f" and {', '.join(within)}" if within else "")
    references = any(is_reference(r) for r in cells.values())
    tail = "; original speech and O-O are references, never compared" if references else ""
    return Marking(marked, f"{meaning}, {where}{tail}")
