"""Kaldi-style score files: `enroll test score target|nontarget [f|m]`, one trial per line.

This is what the VoicePrivacy and Kaldi recipes write next to their trial lists, so users of other
toolkits can bring their scores to vpeval's metrics. The enrollment id is taken as the speaker (as in
VoicePrivacy trials, where the enrollment side is a speaker); the test speaker is unknown.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import NoReturn

import numpy as np

from vpeval.data.textfile import PLAIN_NUMBER, file_problem, read_text
from vpeval.errors import DataError
from vpeval.types import Scores

LABELS = ("target", "nontarget")
GENDERS = ("f", "m")
FORMAT = "enroll test score target|nontarget [f|m]"
_PLAIN_NUMBER = PLAIN_NUMBER


def read_score_file(path: str | Path) -> Scores:
    """Read a score file into Scores (enroll ids double as enroll speakers for the bootstrap).

    Strict: every line has the same 4 or 5 columns, scores are plain finite decimals (no `1_000`,
    which Python's float() would take), and no (enroll, test) pair appears twice. The checks are
    vectorised; the line-by-line pass that names the first bad line runs only on error.
    """
    path = Path(path)
    problem = file_problem(path)
    if problem:
        raise DataError(f"Score file {path} {problem}; pass a file with lines '{FORMAT}'.")
    # UTF-8 only (a BOM dropped, CRLF read as LF), NUL bytes refused: vpeval.data.textfile.
    text = read_text(path, f"Score file {path}")
    # Columns per line, without keeping the split lines: a 5-column line next to a 3-column one
    # would otherwise re-align every token after it.
    widths = set(map(len, map(str.split, text.split("\n"))))
    widths.discard(0)
    if not widths:
        raise DataError(f"Score file {path} has no trials; expected lines '{FORMAT}'.")
    if len(widths) != 1 or not widths <= {4, 5}:
        _raise_bad_line(path, text)
    width = widths.pop()
    tokens = text.split()
    lines = len(tokens) // width
    columns = [tokens[k::width] for k in range(width)]
    written = "".join(columns[2])
    if "_" in written or not written.isascii():  # float() reads '1_000' and non-ASCII digits
        _raise_bad_line(path, text)
    try:
        values = np.array(columns[2], dtype=np.float64)
    except ValueError:
        _raise_bad_line(path, text)
    if not np.isfinite(values).all() or not set(columns[3]) <= set(LABELS):
        _raise_bad_line(path, text)
    genders = None
    if width == 5:
        if not set(columns[4]) <= set(GENDERS):
            _raise_bad_line(path, text)
        genders = np.where(np.fromiter(map("f".__eq__, columns[4]), dtype=bool, count=lines), "f", "m")
    if len(set(map(hash, zip(columns[0], columns[1])))) != lines:  # equal hashes: look exactly
        _refuse_repeats(path, text)
    enroll = np.array(columns[0])
    return Scores(
        scores=values,
        targets=np.fromiter(map("target".__eq__, columns[3]), dtype=bool, count=lines),
        genders=genders,
        enroll_speakers=enroll,
        test_speakers=None,
        enroll_ids=enroll,
        test_ids=np.array(columns[1], dtype=object),
    )


def _raise_bad_line(path: Path, text: str) -> NoReturn:
    """Find the first line that breaks the format (the slow path, only on error) and name it."""
    rows = [(number, line.split()) for number, line in enumerate(text.split("\n"), start=1)]
    rows = [(number, fields) for number, fields in rows if fields]
    counts = Counter(len(fields) for _, fields in rows if len(fields) in (4, 5))
    usual = counts.most_common(1)[0][0] if counts else None
    earlier_usual = False  # true while every line so far had the usual width
    for k, (number, fields) in enumerate(rows):
        problem = _line_problem(fields)
        if usual is not None and len(fields) in (4, 5) and len(fields) != usual:
            width = f"it has {len(fields)} columns where {'earlier' if earlier_usual else 'most'} lines have {usual}"
            problem = width if problem is None else f"{width} (and as a {len(fields)}-column line, {problem})"
        if problem is not None:
            raise DataError(f"{path}:{number}: {problem}; expected '{FORMAT}'.")
        earlier_usual = len(fields) == usual and (earlier_usual or k == 0)
    raise DataError(f"Score file {path} is malformed; expected lines '{FORMAT}'.")


def _refuse_repeats(path: Path, text: str) -> None:
    """Name the first (enroll, test) pair that appears twice, with both lines."""
    first: dict[tuple[str, str], int] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        pair = (fields[0], fields[1])
        if pair in first:
            raise DataError(
                f"{path}:{number}: the trial '{fields[0]} {fields[1]}' repeats line {first[pair]}; a trial listed "
                "twice weighs double in every metric, so keep one line per enroll-test pair."
            )
        first[pair] = number


def _line_problem(fields: list[str]) -> str | None:
    if len(fields) not in (4, 5):
        return f"it has {len(fields)} columns"
    try:
        value = float(fields[2])
    except ValueError:
        return f"the score '{fields[2]}' is not a number"
    if not np.isfinite(value):
        return f"the score is {fields[2]}"
    if not _PLAIN_NUMBER.fullmatch(fields[2]):
        return f"the score '{fields[2]}' is not a plain decimal number (digits, '.', an exponent and a sign only)"
    if fields[3] not in LABELS:
        return f"the label '{fields[3]}' is neither target nor nontarget"
    if len(fields) == 5 and fields[4] not in GENDERS:
        return f"the gender '{fields[4]}' is neither f nor m"
    return None


def write_score_file(path: str | Path, scores: Scores) -> None:
    """Write Scores in the same format (scores with full float precision, so reading them back is exact)."""
    n = len(scores)
    enroll = _ids(scores.enroll_ids, scores.enroll_speakers, "enroll", n)
    test = _ids(scores.test_ids, scores.test_speakers, "test", n)
    labels = np.where(scores.targets, "target", "nontarget")
    genders = None
    if scores.genders is not None:
        genders = np.asarray(scores.genders).astype(str)
        if not np.isin(genders, GENDERS).all():
            genders = None  # a column is all or nothing; unknown genders drop it
    rows = [f"{e} {t} {s!r} {lab}" for e, t, s, lab in zip(enroll, test, scores.scores.tolist(), labels, strict=True)]
    if genders is not None:
        rows = [f"{r} {g}" for r, g in zip(rows, genders, strict=True)]
    Path(path).write_text("\n".join(rows) + ("\n" if rows else ""))


def _ids(ids: np.ndarray | None, speakers: np.ndarray | None, side: str, n: int) -> list[str]:
    source = ids if ids is not None else speakers
    if source is None:
        return [f"{side}{i}" for i in range(n)]
    out = [str(x) for x in np.asarray(source)]
    if any(not x or any(c.isspace() for c in x) for x in out):
        raise DataError(f"Cannot write a score file: some {side} ids are empty or contain whitespace.")
    return out
