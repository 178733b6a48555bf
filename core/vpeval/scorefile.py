"""Kaldi-style score files: `enroll test score target|nontarget [f|m]`, one trial per line.

This is what the VoicePrivacy and Kaldi recipes write next to their trial lists, so users of other
toolkits can bring their scores to vpeval's metrics. The enrollment id is taken as the speaker (as in
VoicePrivacy trials, where the enrollment side is a speaker); the test speaker is unknown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import numpy as np

from vpeval.data.textfile import MAX_LINE_CHARS, PLAIN_NUMBER, file_problem, read_text
from vpeval.errors import DataError
from vpeval.types import Scores

LABELS = ("target", "nontarget")
GENDERS = ("f", "m")
FORMAT = "enroll test score target|nontarget [f|m]"
_PLAIN_NUMBER = PLAIN_NUMBER


# Bytes read at a time: each block is checked and turned into columns before the next is read, so memory
# holds the columns (about 35 bytes a line and the distinct ids), not the text or a string per token.
_BLOCK = 1 << 20


def read_score_file(path: str | Path) -> Scores:
    """Read a score file into Scores (enroll ids double as enroll speakers for the bootstrap).

    Strict: every line has the same 4 or 5 columns, scores are plain finite decimals (no `1_000`,
    which Python's float() would take), and no (enroll, test) pair appears twice. The file is read in
    blocks of lines, each checked vectorised and kept as columns: scores, labels, genders and the ids as
    codes into the distinct ids (one string per distinct id, shared by its trials). Anything wrong sends
    the whole file through the line-by-line pass (vpeval.data.textfile's reader, then the first bad line
    named), which runs only on error.
    """
    path = Path(path)
    problem = file_problem(path)
    if problem:
        raise DataError(f"Score file {path} {problem}; pass a file with lines '{FORMAT}'.")
    columns = _Columns()
    try:
        with open(path, "rb") as handle:
            for text in _blocks(handle):
                if not columns.add(text):
                    break
            else:
                return columns.scores(path)
    except OSError as exc:
        raise DataError(f"Score file {path} cannot be read ({exc.strerror or exc}); check the file.") from None
    return _whole_file(path)


def _blocks(handle) -> Iterator[str]:
    """Whole lines of UTF-8 text, a block at a time ("" for a block the checked reader must judge)."""
    first = True
    while block := handle.read(_BLOCK):
        if not block.endswith(b"\n"):
            block += handle.readline(4 * MAX_LINE_CHARS)  # UTF-8: up to 4 bytes a character
            if block[-1:] not in (b"\n", b"") and handle.read(1):
                yield ""  # a line over the limit: the checked reader names it
                return
        if first and block[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in block:
            yield ""
            return
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            yield ""
            return
        if first:
            text, first = text.removeprefix("\ufeff"), False
        yield "" if "\ufeff" in text else text.replace("\r", "\n")  # CRLF as LF: blank lines are skipped


class _Columns:
    """The columns of a score file, block by block; `add` is False at the first block that breaks the format."""

    def __init__(self) -> None:
        self.width = 0
        self.ids: tuple[dict[str, int], dict[str, int]] = ({}, {})  # enroll, test: id -> code
        self.parts: list[list[np.ndarray]] = [[], [], [], [], []]  # scores, targets, female, enroll, test codes

    def add(self, text: str) -> bool:
        widths = set(map(len, map(str.split, text.split("\n"))))
        widths.discard(0)
        if not text or len(widths) > 1 or not widths <= {self.width or 4, self.width or 5}:
            return False
        if not widths:
            return True
        self.width = width = widths.pop()
        tokens = text.split()
        lines = len(tokens) // width
        written = tokens[2::width]
        joined = "".join(written)
        if "_" in joined or not joined.isascii():  # float() reads '1_000' and non-ASCII digits
            return False
        try:
            values = np.array(written, dtype=np.float64)
        except ValueError:
            return False
        labels, genders = set(tokens[3::width]), set(tokens[4::width]) if width == 5 else set(GENDERS)
        if not np.isfinite(values).all() or not labels <= set(LABELS) or not genders <= set(GENDERS):
            return False
        targets = np.fromiter(map("target".__eq__, tokens[3::width]), dtype=bool, count=lines)
        female = np.fromiter(map("f".__eq__, tokens[4::width]), dtype=bool, count=lines) if width == 5 else targets
        codes = [self._codes(self.ids[k], tokens[k::width]) for k in (0, 1)]
        for part, column in zip(self.parts, (values, targets, female, *codes), strict=True):
            part.append(column)
        return True

    def _joined(self, k: int) -> np.ndarray:
        """Column k as one array, its blocks let go one column at a time (the peak: the columns and one copy)."""
        joined = np.concatenate(self.parts[k])
        self.parts[k].clear()
        return joined

    @staticmethod
    def _codes(known: dict[str, int], ids: list[str]) -> np.ndarray:
        distinct, inverse = np.unique(np.array(ids), return_inverse=True)
        local = np.fromiter((known.setdefault(i, len(known)) for i in distinct.tolist()), np.int64, len(distinct))
        return local[inverse].astype(np.int32 if len(known) < 1 << 31 else np.int64)

    def scores(self, path: Path) -> Scores:
        if not self.parts[0]:
            raise DataError(f"Score file {path} has no trials; expected lines '{FORMAT}'.")
        values, targets, female, enroll, test = (self._joined(k) for k in range(5))
        pairs = enroll.astype(np.int64) * len(self.ids[1]) + test
        pairs.sort()
        if (pairs[1:] == pairs[:-1]).any():
            _refuse_repeats(path, read_text(path, f"Score file {path}"))
        del pairs
        # object arrays indexed by code: one string per distinct id, shared by its trials
        enroll_ids, test_ids = (
            np.array(list(ids), dtype=object)[codes] for ids, codes in zip(self.ids, (enroll, test))
        )
        return Scores(
            scores=values,
            targets=targets,
            genders=np.where(female, "f", "m") if self.width == 5 else None,
            enroll_speakers=enroll_ids,
            test_speakers=None,
            enroll_ids=enroll_ids,
            test_ids=test_ids,
        )


def _whole_file(path: Path) -> Scores:
    """The slow path: the checked reader on the whole file, then the first bad line named (or, for a file the
    blocks could not split, such as one with old Mac CR line ends, its columns)."""
    text = read_text(path, f"Score file {path}")  # UTF-8 only (a BOM dropped, CRLF as LF), NUL bytes refused
    whole = _Columns()
    if whole.add(text):
        return whole.scores(path)
    if not text.split():
        raise DataError(f"Score file {path} has no trials; expected lines '{FORMAT}'.")
    _raise_bad_line(path, text)


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
