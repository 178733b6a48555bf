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


def asv_blocks(
    rows: list[dict[str, Any]], metric: str = "eer", notes: dict[str, str] | None = None
) -> list[tuple[str, str]]:
    """(title, table) per attacker: EER by dataset, split, gender and trial condition; `notes`: attacker label ->
    what its title adds (a setting that changes its numbers, such as asv_ssl's toolkit-sign embeddings)."""
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
        note = f", {notes[attacker]}" if notes and attacker in notes else ""
        title = f"---- ASV results: {attacker} (trained on {scenario}{note}) ----"
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
        named = (r.get("details") or {}).get("dataset")  # a per-set row (wer sets, uar's spk2fold folders)
        dataset, split = split_name(named) if named else ("all", "all")
        body.append([dataset, split, condition, system, f"{r['value']:.3f}"])
    header = ["dataset", "split", column.lower(), "system", column]
    return f"---- {column.upper()} results ----", _table(header, body)


def vpc_results_text(rows: list[dict[str, Any]], notes: dict[str, str] | None = None) -> str:
    """The whole summary: SER, ASV per attacker (titles with `notes`), ASR, in the toolkit's order."""
    blocks = []
    ser = utility_block(rows, "uar", "UAR")
    blocks += [ser] if ser else []
    blocks += asv_blocks(rows, notes=notes)
    asr = utility_block(rows, "wer", "WER")
    blocks += [asr] if asr else []
    return "\n\n".join(f"{title}\n{table}" for title, table in blocks) + "\n"


def embedding_notes(exp) -> dict[str, str]:
    """Attacker label -> a note for the attackers whose embeddings follow VPC 2026's toolkit-sign quirk."""
    return {
        a.label: "embedding_normalization toolkit-sign: the VPC 2026 toolkit's +-1 embeddings"
        for a in exp.attackers
        if a.plugin.params.get("embedding_normalization") == "toolkit-sign"
    }


def toolkit_summaries(exp, rows: list[dict[str, Any]], time: str) -> dict[str, str]:
    """The toolkit's own files (run_evaluation.py's save_result_summary, VPC 2024 400de3a / 2026 e6810a4), path ->
    text, per `precomputed` `vpc` submission: eval_orig<suffix>/results_orig.txt (2024: O-O per f/m folder; 2026:
    A-A of the mixed folder; ASR from `wer` rows per trial folder) and eval_anon<suffix>/results_anon.txt (the
    semi-informed A-A), with its index numbers, order and layout; the SER block first where `uar` gave VPC 2024's
    per-split rows (its spk2fold folders)."""
    mixed = exp.corpus.params.get("challenge") == "2026-track1"
    out = {}
    for anon in exp.anonymizers:
        suffix = (anon.steps[0].params.get("vpc") or {}).get("suffix")
        mine = [r for r in rows if r.get("anonymizer") == anon.label and r.get("metric") == "eer" and r.get("dataset")]
        parts = (
            ("orig", "original", "ASV_eval", "A-A" if mixed else "O-O"),
            ("anon", "anonymized", "ASV_eval^anon", "A-A"),
        )
        for part, scenario, title, keep in parts:
            table = _toolkit_asv(mine, scenario, keep, mixed)
            if suffix and table:
                path = f"results_summary/eval_{part}{suffix}/results_{part}.txt"
                ser = _toolkit_ser(rows, anon.label, every_emotion=mixed) if part == "orig" else ""
                out[path] = f"---- Time: {time} ----\n" + (f"\n---- SER results ----\n{ser}\n" if ser else "")
                out[path] += f"\n---- {title} results ----\n{table}\n"
                asr = _toolkit_asr(rows, anon.label) if part == "orig" else ""
                out[path] += f"\n---- ASR results ----\n{asr}\n" if asr else ""
    return out


def _toolkit_asr(rows: list[dict[str, Any]], label: str) -> str:
    """evaluate_asr's rows (its four datasets, then their anonymized copies, numbered so) for libri dev / test."""
    wer = [r for r in rows if r.get("metric") == "wer" and (r.get("details") or {}).get("dataset")]
    body, index = [], []
    for i, speech in enumerate(("original", label)):
        for j, dataset in enumerate(("libri_dev", "libri_test")):
            mine = [
                r for r in wer if r["anonymizer"] == speech and r["details"]["dataset"].startswith(f"{dataset}_trials")
            ]
            words = sum(r["details"]["reference_words"] for r in mine)
            if words:
                errors = sum(round(r["value"] * r["details"]["reference_words"] / 100) for r in mine)
                body.append([*dataset.split("_"), "anon" if i else "original", round(100 * errors / words, 3)])
                index.append(str(4 * i + j))
    order = sorted(range(len(body)), key=lambda n: (body[n][0], body[n][1]))
    return _pandas_string(["dataset", "split", "asr", "WER"], [body[n] for n in order], [index[n] for n in order])


def _toolkit_ser(rows: list[dict[str, Any]], label: str, every_emotion: bool = False) -> str:
    """evaluate_ser's mean table as save_result_summary prints it: one row per dataset, split and speech (groupby's
    order: anon before original), UAR and ACC_<emotion> means unrounded, two header rows; from uar's per-split
    rows. The ACC columns: VPC 2024 (400de3a) aggregates those of the last fold row it computed (the last folder's
    anonymized copy); VPC 2026 (e6810a4, `every_emotion`) every ACC column of its fold rows, in the order they
    first come (the originals' folders, then their copies, each in spk2fold's order)."""
    uar = [r for r in rows if r.get("metric") == "uar" and (r.get("details") or {}).get("fold_rows")]
    found = [r for r in uar if r.get("anonymizer") in ("original", label) and r.get("value") is not None]
    if not found:
        return ""
    found = [r for r in found if r["anonymizer"] == "original"] + [r for r in found if r["anonymizer"] != "original"]
    if every_emotion:
        folds = [f for r in found for f in r["details"]["fold_rows"]]
        emotions = list(dict.fromkeys(e for f in folds for e in f.get("accuracy") or {}))
    else:
        emotions = found[-1]["details"]["accuracy_order"]  # the copies come after the originals
    body = []
    for r in found:
        dataset, split = (r["details"]["dataset"].split("_") + ["_"])[:2]
        accuracy = r["details"]["per_class_accuracy"]
        cells = [float(accuracy[e]) if e in accuracy else float("nan") for e in emotions]
        body.append([dataset, split, "original" if r["anonymizer"] == "original" else "anon", r["value"], *cells])
    body.sort(key=lambda row: tuple(row[:3]))
    header = ["dataset", "split", "ser", "UAR", *(f"ACC_{e}" for e in emotions)]
    return two_level(header, body, [str(n) for n in range(len(body))])


def two_level(header: list[str], body: list[list[Any]], index: list[str]) -> str:
    """DataFrame.to_string() of evaluate_ser's aggregate: the column names, then a line of `mean` under each
    aggregated column (pandas' second header row), with the column widths of the one-level table."""
    lines = _pandas_string(header, body, index).split("\n")
    second, pos = [" "] * len(lines[0]), 0
    for n, name in enumerate(header):  # right-justified: each column ends where its name ends
        pos = lines[0].index(name, pos) + len(name)
        if n >= 3:
            second[pos - 4 : pos] = "mean"
    return "\n".join([lines[0], "".join(second)] + lines[1:])


def _toolkit_asv(rows: list[dict[str, Any]], scenario: str, keep: str, mixed: bool) -> str:
    """evaluate_asv's rows (enrollment-trial pair x oo, oa, aa, numbered so), those of `keep`, sorted stably."""
    rows = [r for r in rows if r.get("scenario") == scenario and r["gender"] in (("all",) if mixed else ("f", "m"))]
    body, index = [], []
    for i, dataset in enumerate(sorted({r["dataset"] for r in rows})):
        for j, gender in enumerate(("all",) if mixed else ("f", "m")):
            for k, protocol in enumerate(SIDES):
                found = [r for r in rows if (r["dataset"], r["gender"], r["protocol"]) == (dataset, gender, protocol)]
                if protocol == keep and found:
                    name, split = dataset.split("_")[:2] if "_" in dataset else (dataset, "_")
                    shown = "mixed" if mixed else gender
                    body.append([name, split, shown, *SIDES[protocol], round(found[0]["value"], 3)])
                    index.append(str((i * (1 if mixed else 2) + j) * 3 + k))
    order = sorted(range(len(body)), key=lambda n: (body[n][0], body[n][1]))
    header = ["dataset", "split", "gender", "enrollment", "trial", "EER"]
    return _pandas_string(header, [body[n] for n in order], [index[n] for n in order]) if body else ""


def _pandas_string(header: list[str], rows: list[list[Any]], index: list[str]) -> str:
    """DataFrame.to_string() of these columns: index left-justified, each cell with pandas' leading space, floats
    as '{: .6f}' with the zeros every number of the column ends in trimmed (NaN as NaN), every column
    right-justified."""
    if not rows:  # first: with no cells, the zero-trimming loop below would never end
        return ""
    columns = []
    for j, name in enumerate(header):
        cells = [row[j] for row in rows]
        if all(isinstance(c, float) for c in cells):
            # NaN as pandas prints it (an emotion a row lacks), the zeros trimmed over the numbers only
            text = [f"{c: .6f}" if c == c else " NaN" for c in cells]
            numbers = [n for n, c in enumerate(cells) if c == c]
            while numbers and all(text[n].endswith("0") and not text[n].endswith(".0") for n in numbers):
                text = [t[:-1] if n in numbers else t for n, t in enumerate(text)]
        else:
            text = [f" {c}" for c in cells]
        width = max(len(name), *(len(t) for t in text))
        columns.append([name.rjust(width)] + [t.rjust(width) for t in text])
    left = max(len(i) for i in index)
    lines = [[""] + index] + columns
    return "\n".join(lines[0][n].ljust(left) + "".join(" " + col[n] for col in lines[1:]) for n in range(len(rows) + 1))
