"""Kaldi-style score files: `enroll test score target|nontarget [f|m]`, one trial per line.

This is what the VoicePrivacy and Kaldi recipes write next to their trial lists, so users of other
toolkits can bring their scores to vpeval's metrics. The enrollment id is taken as the speaker (as in
VoicePrivacy trials, where the enrollment side is a speaker); the test speaker is unknown.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import numpy as np

from vpeval.errors import DataError
from vpeval.types import Scores

LABELS = ("target", "nontarget")
GENDERS = ("f", "m")
FORMAT = "enroll test score target|nontarget [f|m]"


def read_score_file(path: str | Path) -> Scores:
    """Read a score file into Scores (enroll ids double as enroll speakers for the bootstrap)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise DataError(f"Score file {path} does not exist; pass a file with lines '{FORMAT}'.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"Score file {path} cannot be read ({exc}); pass a text file with lines '{FORMAT}'.") from None
    tokens = text.split()
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if len(tokens) not in (4 * lines, 5 * lines):  # blank lines or a broken line: count exactly
        lines = sum(1 for line in text.splitlines() if line.strip())
    if lines == 0:
        raise DataError(f"Score file {path} has no trials; expected lines '{FORMAT}'.")
    width = len(tokens) // lines
    if width not in (4, 5) or width * lines != len(tokens):
        _raise_bad_line(path, text)
    columns = [tokens[k::width] for k in range(width)]
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
    width = None
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        problem = _line_problem(fields)
        if problem is None and width is not None and len(fields) != width:
            problem = f"it has {len(fields)} columns where earlier lines have {width}"
        if problem is not None:
            raise DataError(f"{path}:{number}: {problem}; expected '{FORMAT}'.")
        width = width or len(fields)
    raise DataError(f"Score file {path} is malformed; expected lines '{FORMAT}'.")


def _line_problem(fields: list[str]) -> str | None:
    if len(fields) not in (4, 5):
        return f"it has {len(fields)} columns"
    try:
        value = float(fields[2])
    except ValueError:
        return f"the score '{fields[2]}' is not a number"
    if not np.isfinite(value):
        return f"the score is {fields[2]}"
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
