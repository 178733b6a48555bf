"""CSV and JSONL manifests: one utterance per row with its path and labels.

Columns: path and speaker (required); id, gender, transcript, emotion, session, channel, sample_rate and
duration_s (optional; unknown columns are ignored). Relative paths are resolved against the manifest's
folder, or against `root` when given.
"""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vpeval.errors import DataError
from vpeval.types import Corpus, Utterance

REQUIRED = ("path", "speaker")
GENDERS = {"m": "m", "male": "m", "man": "m", "f": "f", "female": "f", "woman": "f"}


def read_manifest(path: str | os.PathLike, root: str | os.PathLike | None = None, name: str | None = None) -> Corpus:
    """The corpus a CSV (.csv, .tsv) or JSONL (.jsonl, .json lines) manifest describes."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Manifest {path} does not exist; check the corpus `path` parameter.")
    base = Path(root) if root is not None else path.parent
    rows = list(_rows(path))
    if not rows:
        raise DataError(f"Manifest {path} has no rows; add one line per utterance.")
    utterances = [_utterance(path, line, row, base) for line, row in rows]
    lines = [line for line, _ in rows]
    utterances = _with_ids(path, lines, [row for _, row in rows], utterances)
    _check_genders(path, lines, utterances)
    # Where each utterance was listed, so later checks (the audio scan) can name the line.
    origin = {u.id: f"Manifest {path} line {line}" for u, line in zip(utterances, lines)}
    return Corpus(name=name or path.parent.name or path.stem, utterances=utterances,
                  info={"source": str(path), "origin": origin})


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, row) pairs with keys lower-cased and empty values dropped."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        yield from _csv_rows(path, "\t" if suffix == ".tsv" else ",")
    elif suffix in (".jsonl", ".json", ".ndjson"):
        yield from _jsonl_rows(path)
    else:
        raise DataError(f"Manifest {path} is neither .csv, .tsv nor .jsonl; rename it to say which format it is.")


def _csv_rows(path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        header = [h.strip().lower() for h in reader.fieldnames or []]
        for column in REQUIRED:
            if column not in header:
                raise DataError(
                    f"Manifest {path} has no '{column}' column (its header is {','.join(header) or 'empty'}); "
                    f"add it (required columns: {', '.join(REQUIRED)})."
                )
        for row in reader:
            line = reader.line_num
            if None in row:
                raise DataError(f"Manifest {path} line {line} has more fields than the header; quote values that contain '{delimiter}'.")
            yield line, _clean({k.strip().lower(): v for k, v in row.items() if k is not None})


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, encoding="utf-8-sig") as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                row = json.loads(text)
            except json.JSONDecodeError as exc:
                raise DataError(f"Manifest {path} line {line} is not valid JSON ({exc.msg}); write one object per line.") from exc
            if not isinstance(row, dict):
                raise DataError(f"Manifest {path} line {line} is not a JSON object; write one object per line.")
            row = _clean({str(k).strip().lower(): v for k, v in row.items()})
            for column in REQUIRED:
                if column not in row:
                    raise DataError(f"Manifest {path} line {line} has no '{column}'; every row needs {' and '.join(REQUIRED)}.")
            yield line, row


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in row.items():
        if value is None:
            continue
        value = value.strip() if isinstance(value, str) else value
        if value != "":
            out[key] = value
    return out


def _utterance(path: Path, line: int, row: dict[str, Any], base: Path) -> Utterance:
    where = f"Manifest {path} line {line}"
    for column in REQUIRED:
        if column not in row:
            raise DataError(f"{where} has an empty '{column}'; every row needs {' and '.join(REQUIRED)}.")
    for column in ("id", "speaker"):
        value = str(row.get(column, "x"))
        if any(c.isspace() for c in value):
            raise DataError(
                f"{where} has the {column} '{value}', which holds whitespace; use ids without spaces "
                "(Kaldi files and score files separate fields by whitespace)."
            )
    audio = Path(str(row["path"]))
    full = audio if audio.is_absolute() else base / audio
    if full.is_dir():
        raise DataError(f"{where} names {full}, which is a folder, not an audio file; list the audio file itself.")
    gender = row.get("gender")
    if gender is not None:
        gender = GENDERS.get(str(gender).strip().lower())
        if gender is None:
            raise DataError(f"{where} has gender '{row['gender']}'; use m or f (or male/female), or leave it empty.")
    return Utterance(
        id=str(row.get("id", "")),
        speaker=str(row["speaker"]),
        path=str(full),
        gender=gender,
        transcript=_text(row.get("transcript")),
        emotion=_text(row.get("emotion")),
        session=_text(row.get("session")),
        channel=_number(where, row, "channel", int),
        sample_rate=_number(where, row, "sample_rate", int),
        duration=_number(where, row, "duration_s", float),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(where: str, row: dict[str, Any], column: str, kind: type) -> Any:
    if column not in row:
        return None
    try:
        value = kind(float(row[column])) if kind is int else kind(row[column])
    except (TypeError, ValueError):
        raise DataError(f"{where} has {column} '{row[column]}', which is not a number; fix it or leave it empty.") from None
    if value < 0:
        raise DataError(f"{where} has a negative {column} ({value}); fix it or leave it empty.")
    return value


def _with_ids(path: Path, lines: list[int], rows: list[dict[str, Any]], utts: list[Utterance]) -> list[Utterance]:
    """Fill in missing ids from the file name; make derived ids unique; refuse repeated given ids."""
    derived = [not u.id for u in utts]
    ids = [u.id or _derived_id(u, short=True) for u in utts]
    first_line: dict[str, int] = {}
    clashes = {i for i, n in Counter(ids).items() if n > 1}
    for k, u in enumerate(utts):
        if derived[k] and ids[k] in clashes:
            ids[k] = _derived_id(u, short=False, relative=str(rows[k]["path"]))
    for k, uid in enumerate(ids):
        if uid in first_line:
            other = first_line[uid]
            hint = "give each row a distinct id" if not derived[k] else "the rows name the same file; remove one"
            raise DataError(f"Manifest {path} lines {other} and {lines[k]} have the same utterance id {uid}; {hint}.")
        first_line[uid] = lines[k]
    return [u if u.id == uid else u.replace(id=uid) for u, uid in zip(utts, ids)]


def _derived_id(u: Utterance, short: bool, relative: str = "") -> str:
    """The file stem, prefixed by the speaker unless it already starts with it (Kaldi sorts on that)."""
    stem = Path(u.path).stem if short else os.path.splitext(relative)[0].replace("\\", "/").strip("/").replace("/", "-")
    stem = "_".join(stem.split())
    speaker = "_".join(u.speaker.split())
    return stem if stem.startswith(speaker) else f"{speaker}-{stem}"


def _check_genders(path: Path, lines: list[int], utts: list[Utterance]) -> None:
    seen: dict[str, tuple[str, int]] = {}
    for line, u in zip(lines, utts):
        if u.gender is None:
            continue
        if u.speaker in seen and seen[u.speaker][0] != u.gender:
            g, first = seen[u.speaker]
            raise DataError(
                f"Manifest {path} gives speaker {u.speaker} gender {g} on line {first} and {u.gender} on line {line}; "
                "make them agree."
            )
        seen.setdefault(u.speaker, (u.gender, line))
