"""The VoicePrivacy toolkits' results summary (`results_orig.txt` / `results_anon.txt`), from a run's rows.

The challenge's run_evaluation.py prints pandas tables: ASV rows `dataset split gender enrollment trial EER`
(enrollment and trial: original or anon), ASR rows `dataset split asr WER` and SER rows
`dataset split ser UAR`. vpeval writes the same columns from its result rows, one ASV block per attacker:
O-O is the toolkit's original/original, O-A original/anon, A-A anon/anon. The datasets come from the run's
evaluation sets (libri_dev -> libri dev); WER and UAR are over the run's evaluation speech (all sets), so
their split reads `all`. `experiment: report: {preset: vpc}` writes results_vpc.txt and a section in report.md.
"""

from __future__ import annotations

from typing import Any

from vpeval.report.select import first_setting, headline

SIDES = {"O-O": ("original", "original"), "O-A": ("original", "anon"), "A-A": ("anon", "anon")}
GENDERS = {"f": "f", "m": "m", "all": "all"}


def split_name(dataset: str) -> tuple[str, str]:
    """libri_dev -> (libri, dev); a name without a split -> (name, all)."""
    head, sep, tail = dataset.rpartition("_")
    return (head, tail) if sep and head else (dataset, "all")


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Right-aligned columns, as pandas' DataFrame.to_string() prints them (with its index column)."""
    cells = [[""] + header] + [[str(i)] + r for i, r in enumerate(rows)]
    widths = [max(len(c[j]) for c in cells) for j in range(len(cells[0]))]
    return "\n".join(" ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in cells)


def asv_blocks(rows: list[dict[str, Any]], metric: str = "eer") -> list[tuple[str, str]]:
    """(title, table) per attacker: EER by dataset, split, gender and trial condition."""
    eer = [r for r in rows if r.get("metric") == metric and r.get("protocol") in SIDES and r.get("value") is not None]
    eer, _ = first_setting(eer)
    blocks = []
    for attacker in dict.fromkeys(r["attacker"] for r in eer):
        mine = [r for r in eer if r["attacker"] == attacker]
        per_set = [r for r in mine if r.get("dataset")] or mine  # one evaluation set: the pooled rows
        body = []
        for r in sorted(
            per_set,
            key=lambda r: (r.get("dataset") or "", r["gender"], list(SIDES).index(r["protocol"]), r["anonymizer"]),
        ):
            if r["gender"] not in GENDERS:
                continue
            dataset, split = split_name(r.get("dataset") or "all")
            enrollment, trial = SIDES[r["protocol"]]
            system = "" if r["protocol"] == "O-O" else r["anonymizer"]
            body.append([dataset, split, r["gender"], enrollment, trial, system, f"{r['value']:.3f}"])
        scenario = mine[0].get("scenario", "")
        title = f"---- ASV results: {attacker} (trained on {scenario}) ----"
        blocks.append((title, _table(["dataset", "split", "gender", "enrollment", "trial", "system", "EER"], body)))
    return blocks


def utility_block(rows: list[dict[str, Any]], metric: str, column: str) -> tuple[str, str] | None:
    chosen = headline([r for r in rows if r.get("metric") == metric and r.get("value") is not None])
    chosen, _ = first_setting(chosen)
    if not chosen:
        return None
    body = []
    for r in chosen:
        condition = "original" if r.get("anonymizer") in (None, "", "original", "none") else "anon"
        system = "" if condition == "original" else r["anonymizer"]
        body.append(["all", "all", condition, system, f"{r['value']:.3f}"])
    header = ["dataset", "split", column.lower(), "system", column]
    return f"---- {column.upper()} results ----", _table(header, body)


def vpc_results_text(rows: list[dict[str, Any]]) -> str:
    """The whole summary: SER, ASV per attacker, ASR, in the toolkit's order."""
    blocks = []
    ser = utility_block(rows, "uar", "UAR")
    blocks += [ser] if ser else []
    blocks += asv_blocks(rows)
    asr = utility_block(rows, "wer", "WER")
    blocks += [asr] if asr else []
    return "\n\n".join(f"{title}\n{table}" for title, table in blocks) + "\n"
