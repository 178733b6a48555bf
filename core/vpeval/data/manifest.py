"""CSV and JSONL manifests: one utterance per row with its path and labels.

Columns: path and speaker (required); id, gender, transcript, emotion, session, channel, sample_rate and
duration_s (optional; unknown columns are ignored). Relative paths are resolved against the manifest's
folder, or against `root` when given.

The file is read by vpeval.data.textfile (UTF-8, one record per line, a column or JSON key given twice
refused, each CSV line as many fields as the header). Values: a JSONL value must have its column's type
(FIELDS: path, gender and transcript strings; ids, speaker, session and emotion strings or whole JSON
numbers; a list, object or boolean is refused), and null, like an empty CSV field, means "not given"
(refused for path and speaker). channel is a whole number >= 0, sample_rate a whole number > 0,
duration_s a finite number > 0; sample_rate, duration_s and channel are checked against the file's
header where it is readable (vpeval.data.declared). A recording (file and channel) listed on two rows is
refused, as is an utterance id listed twice.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vpeval.data.declared import check_declared, check_listed_path
from vpeval.data.textfile import BadNumber, file_problem, kind_of, read_csv, read_jsonl, real_number, whole_number
from vpeval.errors import DataError
from vpeval.types import Corpus, Utterance

REQUIRED = ("path", "speaker")
# Each known column's type, which a JSONL value must have (CSV values are text, read the same way).
FIELDS = {
    "path": "text",
    "speaker": "label",
    "id": "label",
    "session": "label",
    "emotion": "label",
    "gender": "text",
    "transcript": "text",
    "channel": "number",
    "sample_rate": "number",
    "duration_s": "number",
}
FIELD_TYPES = {"text": "a string", "label": "a string (or a whole JSON number)", "number": "a number"}
GENDERS = {"m": "m", "male": "m", "man": "m", "f": "f", "female": "f", "woman": "f"}


def read_manifest(path: str | os.PathLike, root: str | os.PathLike | None = None, name: str | None = None) -> Corpus:
    """The corpus a CSV (.csv, .tsv) or JSONL (.jsonl, .json lines) manifest describes."""
    path = Path(path)
    problem = file_problem(path)
    if problem:
        raise DataError(f"Manifest {path} {problem}; check the corpus `path` parameter.")
    base = Path(root) if root is not None else path.parent
    rows = list(_rows(path))
    if not rows:
        raise DataError(f"Manifest {path} has no rows; add one line per utterance.")
    utterances = [_utterance(path, line, row, base) for line, row in rows]
    lines = [line for line, _ in rows]
    _refuse_repeated_files(path, lines, utterances)
    utterances = _with_ids(path, lines, [row for _, row in rows], utterances)
    _check_genders(path, lines, utterances)
    # Where each utterance was listed, so later checks (the audio scan) can name the line.
    origin = {u.id: f"Manifest {path} line {line}" for u, line in zip(utterances, lines)}
    return Corpus(
        name=name or path.parent.name or path.stem, utterances=utterances, info={"source": str(path), "origin": origin}
    )


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
    header, rows = read_csv(path, f"Manifest {path}", delimiter)
    for column in REQUIRED:
        if column not in header:
            raise DataError(
                f"Manifest {path} has no '{column}' column (its header is {','.join(header) or 'empty'}); "
                f"add it (required columns: {', '.join(REQUIRED)})."
            )
    for line, row in rows:
        yield line, _clean(row)


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line, raw in read_jsonl(path, f"Manifest {path}"):
        where = f"Manifest {path} line {line}"
        row: dict[str, Any] = {}
        for key, value in raw.items():
            name = str(key).strip().lower()
            if name in row:
                raise DataError(f"{where} gives '{name}' twice (as differently written keys); keep one.")
            row[name] = value
        for column, value in row.items():
            _check_type(where, column, value)
        row = _clean(row)
        for column in REQUIRED:
            if column not in row:
                raise DataError(f"{where} has no '{column}'; every row needs {' and '.join(REQUIRED)}.")
        yield line, row


def _check_type(where: str, column: str, value: Any) -> None:
    """A JSONL value must have its column's type (FIELDS); null means 'not given' but for required columns."""
    kind = FIELDS.get(column)
    if kind is None:
        return  # unknown columns are ignored, whatever they hold
    if value is None:
        if column in REQUIRED:
            raise DataError(f"{where} gives {column} null; every row needs a {column} ({FIELD_TYPES[kind]}).")
        return
    ok = {
        "text": isinstance(value, str),
        "label": isinstance(value, (str, int)) and not isinstance(value, bool),
        "number": isinstance(value, (str, int, float)) and not isinstance(value, bool),
    }[kind]
    if not ok:
        shown = json.dumps(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        raise DataError(
            f"{where} gives {column} {shown}, {kind_of(value)}, where a {column} is {FIELD_TYPES[kind]}; "
            "write it as one, or leave it out."
        )


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
    check_listed_path(where, str(row["path"]), str(full))
    gender = row.get("gender")
    if gender is not None:
        gender = GENDERS.get(str(gender).strip().lower())
        if gender is None:
            raise DataError(f"{where} has gender '{row['gender']}'; use m or f (or male/female), or leave it empty.")
    utterance = Utterance(
        id=str(row.get("id", "")),
        speaker=str(row["speaker"]),
        path=str(full),
        gender=gender,
        transcript=_text(row.get("transcript")),
        emotion=_text(row.get("emotion")),
        session=_text(row.get("session")),
        channel=_number(where, row, "channel", whole_number, 0, "a whole number >= 0 (channels count from 0)"),
        sample_rate=_number(where, row, "sample_rate", whole_number, 1, "a whole number of Hz above 0"),
        duration=_number(where, row, "duration_s", real_number, None, "a number of seconds above 0"),
    )
    check_declared(where, utterance.path, utterance.sample_rate, utterance.duration, utterance.channel)
    return utterance


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _number(where: str, row: dict[str, Any], column: str, parse: Any, minimum: int | None, wanted: str) -> Any:
    """The column's number, refused unless finite, of its kind and >= minimum (> 0 when minimum is None)."""
    if column not in row:
        return None
    try:
        value = parse(row[column])
    except BadNumber as exc:
        raise DataError(
            f"{where} has {column} '{row[column]}', which {exc}; write {wanted}, or leave it empty."
        ) from None
    if (value <= 0) if minimum is None else (value < minimum):
        raise DataError(f"{where} has {column} '{row[column]}', out of range; write {wanted}, or leave it empty.")
    return value


def _refuse_repeated_files(path: Path, lines: list[int], utts: list[Utterance]) -> None:
    """One recording (file and channel) listed twice would be tested against itself, or count twice."""
    first: dict[tuple[str, int | None], int] = {}
    for k, u in enumerate(utts):
        key = (os.path.abspath(u.path), u.channel)
        if key in first:
            other = utts[first[key]]
            speakers = f" (under the speakers {other.speaker} and {u.speaker})" if other.speaker != u.speaker else ""
            raise DataError(
                f"Manifest {path} lines {lines[first[key]]} and {lines[k]} list the same file {u.path}"
                f"{'' if u.channel is None else f' (channel {u.channel})'}{speakers}; list each recording once."
            )
        first[key] = k


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
