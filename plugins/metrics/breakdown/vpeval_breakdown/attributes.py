"""Speaker attributes from Kaldi-style spk2<attribute> files or a manifest's columns, and their groups.

An attribute maps a speaker to a value (text). Numeric attributes such as age become bands with declared
edges: [e0, e1), [e1, e2), ... labelled "e0-e1", with "<e0" below the first edge and ">=eK" from the last.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vpeval.data.textfile import BadNumber, read_csv, read_jsonl, read_table, real_number
from vpeval.errors import DataError

Attributes = dict[str, dict[str, str]]  # attribute -> speaker -> value


def read_spk2(path: str | Path) -> dict[str, str]:
    """speaker -> value of one `speaker value` file (the value is the rest of the line)."""
    return {spk: value.strip() for _, (spk, value) in read_table(path, ("speaker-id", "value"), last="rest")}


def read_kaldi_folder(folder: str | Path) -> Attributes:
    """Every spk2<attribute> file of a Kaldi data folder (spk2utt, which lists utterances, excepted)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"Attribute folder {folder} does not exist; give the Kaldi data folder with spk2<name> files.")
    return {p.name[4:]: read_spk2(p) for p in sorted(folder.glob("spk2*")) if p.name != "spk2utt" and p.is_file()}


def read_manifest_columns(path: str | Path, columns: list[str]) -> Attributes:
    """speaker -> value of each asked column of a CSV/TSV/JSONL manifest (one row per utterance); a speaker
    given two different values of one column is refused, an empty value means unknown."""
    path = Path(path)
    if path.suffix in (".jsonl", ".json"):
        rows = [(line, {k: "" if v is None else str(v) for k, v in row.items()}) for line, row in read_jsonl(path)]
        header = sorted({k for _, row in rows for k in row})
    else:
        header, rows = read_csv(path, delimiter="\t" if path.suffix == ".tsv" else ",")
    for column in ["speaker", *columns]:
        if column not in header:
            raise DataError(
                f"Manifest {path} has no column '{column}' (it has: {', '.join(header)}); "
                "name an existing column in the breakdown's `attributes`."
            )
    out: Attributes = {c: {} for c in columns}
    first: dict[tuple[str, str], int] = {}
    for line, row in rows:
        spk = row["speaker"].strip()
        for c in columns:
            value = row.get(c, "").strip()
            if not value:
                continue
            known = out[c].setdefault(spk, value)
            if known != value:
                raise DataError(
                    f"Manifest {path} line {line} gives speaker {spk} {c} '{value}', but line {first[(c, spk)]} "
                    f"gave '{known}'; a speaker has one {c}: correct one of the lines."
                )
            first.setdefault((c, spk), line)
    return out


def band_label(value: float, edges: list[float]) -> str:
    k = int(np.searchsorted(edges, value, side="right"))
    if k == 0:
        return f"<{_fmt(edges[0])}"
    if k == len(edges):
        return f">={_fmt(edges[-1])}"
    return f"{_fmt(edges[k - 1])}-{_fmt(edges[k])}"


def in_bands(attribute: str, values: dict[str, str], edges: list[float], where: str) -> dict[str, str]:
    """speaker -> band label of a numeric attribute."""
    out = {}
    for spk, text in values.items():
        try:
            number = real_number(text)
        except BadNumber as exc:
            raise DataError(
                f"{where} gives speaker {spk} {attribute} '{text}', which {exc}; bands need numbers "
                f"(or remove {attribute} from `bands`)."
            ) from None
        out[spk] = band_label(number, edges)
    return out


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)
