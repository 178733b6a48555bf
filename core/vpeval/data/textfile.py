"""The one reader for text files a user gives vpeval: Kaldi tables, CSV / JSONL manifests, score files.

Every reader of user text (vpeval.data.kaldi, vpeval.data.manifest, vpeval.scorefile, the trial and
side lists of vpeval.data.plan, the precomputed anonymizer through those) goes through here, so every
one of them treats the same bytes the same way, and every problem becomes one `TextFileError` (a
DataError) that names the file, the line and what to do.

What a file must be, whichever reader reads it:

* a regular file: a missing path, a folder, /dev/null or another device, a FIFO or a socket is named
  as what it is (`file_problem`);
* UTF-8 text: one leading UTF-8 byte-order mark is dropped (Excel writes one); other bytes that are
  not UTF-8 (Latin-1, say) are refused with the line, the byte and its offset, and the advice to save
  the file as UTF-8; a UTF-16 file, NUL bytes (binary files) and a byte-order mark later in the file
  (two files joined) are refused with the line;
* lines end in LF, CRLF or CR (all accepted, as Python's universal newlines do); a line holds at most
  MAX_LINE_CHARS characters (a file without line ends is not a table); lines of whitespace only are
  blank and skipped, but keep their number, so line numbers are the editor's.

The API (each function raises TextFileError with the file and line):

* `read_text(path, label)` -> the checked text, line ends as "\\n" (the score file reads it vectorised);
* `read_lines(path, label)` -> [Line(number, text)] of the non-blank lines;
* `read_table(path, columns, label, last=..., unique=..., empty_ok=...)` -> [Row(number, fields)] of a
  whitespace-separated table (Kaldi's wav.scp, utt2spk, spk2utt, trials, ...): `last="exact"` wants
  exactly len(columns) fields, `"rest"` gives the rest of the line as the last field (a path or a
  transcript), `"many"` lets the last column repeat (spk2utt); `unique` refuses a key (first column)
  listed twice, naming both lines;
* `read_csv(path, label, delimiter)` -> (header, [(number, {column: value})]): the header lower-cased
  and stripped, a column named twice refused, each row exactly as many fields as the header (the line
  and the expected columns named otherwise), a quoted field that does not close on its line refused
  (an unclosed quote on line 19 would otherwise swallow lines 20 and 21 in silence); fields as long as
  lines may be (csv's own 131072-character field limit is raised to MAX_LINE_CHARS);
* `read_jsonl(path, label)` -> [(number, object)]: one JSON object per line, a key given twice in any
  object refused (json's object_pairs_hook), NaN / Infinity (which JSON does not allow) refused;
* `whole_number(value)` / `real_number(value)`: a finite number written plainly (digits, '.', an
  exponent, a sign; JSON numbers as they are, never a bool), or BadNumber with the reason; whole
  numbers may be written 16000.0 (pandas writes integer columns with gaps so);
* `file_problem(path)` -> why a path is not a readable regular file, or None; `quoted(line)` and
  `kind_of(value)` word a line or a JSON value for an error sentence.

What the values mean is each reader's business (a manifest's column types, Kaldi's consistency
checks); values that describe an audio file (sample_rate, duration, channel) are checked against the
file's header by vpeval.data.declared, whose docstring gives the decision for each field.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import stat
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

from vpeval.errors import DataError

MAX_LINE_CHARS = 1 << 20  # a spk2utt line of 30 000 utterances is 600 kB; more is no line-based table
QUOTED_CHARS = 80  # how much of a bad line an error sentence quotes
PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_BOM = "\ufeff"


class TextFileError(DataError):
    """A user's text file cannot be read as the table it should be; names the file and line."""

    def __init__(self, message: str, path: str | os.PathLike | None = None, line: int | None = None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.line = line


class BadNumber(ValueError):
    """A value that is not the number its field needs; the message is the reason, as a clause."""


class Line(NamedTuple):
    number: int  # 1-based, counting blank lines too
    text: str  # without its line end


class Row(NamedTuple):
    number: int
    fields: tuple[str, ...]


# -- files -----------------------------------------------------------------------------------------


def file_problem(path: str | os.PathLike) -> str | None:
    """Why `path` is not a regular file to read (a clause such as 'does not exist'), or None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a part of its path is a file, not a folder)"
    except PermissionError:
        return "cannot be read (permission denied)"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device (such as /dev/null), not a file"
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a file"
    return "is not a regular file"


def read_text(path: str | os.PathLike, label: str | None = None) -> str:
    """The whole file as checked UTF-8 text with "\\n" line ends (see the module docstring)."""
    label = label or str(path)
    problem = file_problem(path)
    if problem:
        raise TextFileError(f"{label} {problem}; give the path of a UTF-8 text file.", path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise TextFileError(
            f"{label} cannot be read ({exc.strerror or exc}); check the file and its permissions.", path
        ) from None
    return _decode(path, label, data)


def read_lines(path: str | os.PathLike, label: str | None = None) -> list[Line]:
    """The non-blank lines of a text file with their numbers, checked (see the module docstring)."""
    return [line for line in _numbered(read_text(path, label)) if line.text.strip()]


def _decode(path: str | os.PathLike, label: str, data: bytes) -> str:
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise TextFileError(
            f"{label} is UTF-16 text; save it as UTF-8 (for example `iconv -f utf-16 -t utf-8`).", path, 1
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise TextFileError(
            f"{label} line {line} holds a NUL byte (at byte offset {nul}), so it is a binary file, not text; "
            "give the text file itself.",
            path,
            line,
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
        shift = 3
    else:
        shift = 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise TextFileError(
            f"{label} line {line} is not UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start + shift} "
            f"(column {column}) is not valid UTF-8; save the file as UTF-8 (for example, from Latin-1: "
            "`iconv -f latin1 -t utf-8`).",
            path,
            line,
        ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    bom = text.find(_BOM)
    if bom >= 0:
        line = text.count("\n", 0, bom) + 1
        raise TextFileError(
            f"{label} line {line} holds a byte-order mark (U+FEFF) inside the file, where it would become part of "
            "an id (were two files joined?); remove it.",
            path,
            line,
        )
    if len(text) > MAX_LINE_CHARS:
        longest = max(text.split("\n"), key=len)
        if len(longest) > MAX_LINE_CHARS:
            line = text.count("\n", 0, text.find(longest)) + 1
            raise TextFileError(
                f"{label} line {line} is {len(longest)} characters long, over the {MAX_LINE_CHARS}-character limit "
                "for one line; each line holds one record (is this the right file, with its line ends?).",
                path,
                line,
            )
    return text


def _numbered(text: str) -> list[Line]:
    return [Line(number, line) for number, line in enumerate(text.split("\n"), start=1)]


def quoted(text: str) -> str:
    """A line as an error sentence quotes it: stripped, and cut short when long."""
    text = text.strip()
    return text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 3] + "..."


# -- whitespace-separated tables (Kaldi) -------------------------------------------------------------


def read_table(
    path: str | os.PathLike,
    columns: Sequence[str],
    label: str | None = None,
    *,
    last: Literal["exact", "rest", "many"] = "exact",
    unique: bool = True,
    empty_ok: bool = False,
) -> list[Row]:
    """The rows of a whitespace-separated table, each checked against `columns` (their names).

    `last`: "exact" (exactly len(columns) fields), "rest" (the last field is the rest of the line,
    stripped), "many" (the last column repeats: one or more fields). `unique` refuses a first-column
    key that appears on two lines. An empty file is refused unless `empty_ok`, which also lets a
    "rest" field be empty (a Kaldi `text` line with no words).
    """
    label = label or str(path)
    expected = " ".join(columns) + (" ..." if last == "many" else "")
    rows = []
    first_line: dict[str, int] = {}
    for number, text in read_lines(path, label):
        if last == "rest":
            parts = text.rstrip().split(maxsplit=len(columns) - 1)  # Kaldi trims the rest of the line too
            fields = tuple(parts) + (("",) if empty_ok and len(parts) == len(columns) - 1 else ())
            ok = len(fields) == len(columns)
        else:
            fields = tuple(text.split())
            ok = len(fields) == len(columns) if last == "exact" else len(fields) >= len(columns)
        if not ok:
            raise TextFileError(
                f"{label} line {number} reads '{quoted(text)}' ({_fields(len(fields))}); expected '{expected}'"
                f"{'' if last == 'rest' else ' (ids hold no spaces)'}.",
                path,
                number,
            )
        if unique:
            key = fields[0]
            if key in first_line:
                raise TextFileError(
                    f"{label} line {number} repeats {key}, already on line {first_line[key]}; list each "
                    f"{columns[0]} once.",
                    path,
                    number,
                )
            first_line[key] = number
        rows.append(Row(number, fields))
    if not rows and not empty_ok:
        raise TextFileError(f"{label} is empty; it needs one '{expected}' line per entry.", path)
    return rows


def _fields(n: int) -> str:
    return f"{n} field" if n == 1 else f"{n} fields"


# -- CSV / TSV ---------------------------------------------------------------------------------------


def read_csv(
    path: str | os.PathLike, label: str | None = None, delimiter: str = ","
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, rows) of a CSV or TSV file: see the module docstring for what is refused.

    The header is the first non-blank line, lower-cased and stripped; each row maps every header
    column to its field as written (unstripped). Blank lines are skipped.
    """
    label = label or str(path)
    lines = read_lines(path, label)
    if not lines:
        raise TextFileError(f"{label} is empty; it needs a header line and one line per entry.", path)
    # The default limit (131072) is lower than a line may be; raising it never lowers another's.
    if csv.field_size_limit() < MAX_LINE_CHARS:
        csv.field_size_limit(MAX_LINE_CHARS)
    name = "TSV" if delimiter == "\t" else "CSV"
    parsed = [(number, _csv_line(path, label, number, text, delimiter, name)) for number, text in lines]
    header_line, names = parsed[0]
    header = [h.strip().lower() for h in names]
    seen: dict[str, int] = {}
    for k, column in enumerate(header):
        if column in seen:
            raise TextFileError(
                f"{label} line {header_line} names the column '{column}' twice "
                f"(columns {seen[column] + 1} and {k + 1}); rename or remove one.",
                path,
                header_line,
            )
        seen[column] = k
    rows = []
    for number, fields in parsed[1:]:
        if len(fields) != len(header):
            more = len(fields) > len(header)
            raise TextFileError(
                f"{label} line {number} has {'more' if more else 'fewer'} fields than the header ({len(fields)} where "
                f"the header has {len(header)}: {', '.join(header)}); give every line one field per column"
                f"{', quoting values that contain ' + repr(delimiter) if more else ''}.",
                path,
                number,
            )
        rows.append((number, dict(zip(header, fields))))
    return header, rows


def _csv_line(path: str | os.PathLike, label: str, number: int, text: str, delimiter: str, name: str) -> list[str]:
    """One physical line as CSV fields: a record must not span lines (see read_csv)."""
    try:
        return next(csv.reader([text], delimiter=delimiter, strict=True))
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            reason = "opens a quoted field that does not close on that line (a field cannot span lines here)"
        else:
            reason = f"is not valid {name} ({exc})"
        raise TextFileError(
            f"{label} line {number} {reason}; close the quote or remove the stray '\"'.", path, number
        ) from None


# -- JSON Lines ------------------------------------------------------------------------------------


class _Repeated(ValueError):
    pass


def _refuse_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Repeated(key)
        out[key] = value
    return out


class _Constant(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _Constant(name)  # NaN, Infinity, -Infinity: Python's json reads them, JSON has none


def read_jsonl(path: str | os.PathLike, label: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) per non-blank line of a JSON Lines file; keys exactly as written."""
    label = label or str(path)
    rows = []
    for number, text in read_lines(path, label):
        try:
            value = json.loads(text, object_pairs_hook=_refuse_repeats, parse_constant=_refuse_constant)
        except _Repeated as exc:
            raise TextFileError(
                f"{label} line {number} gives the key '{exc}' twice in one object; keep one (JSON keeps only the last "
                "in silence).",
                path,
                number,
            ) from None
        except json.JSONDecodeError as exc:
            raise TextFileError(
                f"{label} line {number} is not valid JSON ({exc.msg} at column {exc.colno}); write one JSON object per "
                "line.",
                path,
                number,
            ) from None
        except _Constant as exc:
            raise TextFileError(
                f"{label} line {number} holds {exc}, which is not a JSON number; write a finite number or leave the "
                "field out.",
                path,
                number,
            ) from None
        if not isinstance(value, dict):
            kind = {list: "an array", str: "a string", bool: "a boolean"}.get(
                type(value), "a number" if value is not None else "null"
            )
            raise TextFileError(
                f"{label} line {number} is {kind}, not a JSON object; write one object per line (JSON Lines, not one "
                "JSON document).",
                path,
                number,
            )
        rows.append((number, value))
    return rows


# -- numbers -----------------------------------------------------------------------------------------


def real_number(value: Any) -> float:
    """A finite float from a JSON number or a plainly written decimal string; BadNumber otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise BadNumber(f"is {_kind(value)}, not a number")
    if isinstance(value, str):
        text = value.strip()
        if not PLAIN_NUMBER.fullmatch(text):
            if text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
                raise BadNumber("is not finite (infinite or NaN)")
            raise BadNumber("is not a number (write digits, '.', an exponent and a sign only)")
        number = float(text)
    else:
        try:
            number = float(value)
        except OverflowError:
            raise BadNumber("is too large") from None
    if not math.isfinite(number):
        raise BadNumber("is not finite (too large, infinite or NaN)")
    return number


def whole_number(value: Any) -> int:
    """An int from a JSON integer, an integral float (16000.0) or such a string; BadNumber otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = real_number(value)
    if not number.is_integer():
        raise BadNumber("is not a whole number")
    return int(number)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def kind_of(value: Any) -> str:
    """A JSON value's kind in words ('a list', 'the boolean true', 'null'), for error sentences."""
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return _kind(value)
