"""A score file is held as columns, not as text and a string per token (issue 38, part 7).

Before, a 10-million-line score file peaked at 4.26 GB, about 430 bytes a line (the text, then a Python
string per token, then the lists of columns). Read as blocks turned into columns, the peak is the columns
(scores, labels, genders, id codes) and the distinct ids: measured here with tracemalloc on 200 000
lines, in bytes per line, so the bound does not depend on the machine's speed.
"""

import tracemalloc

import numpy as np
import pytest

from vpeval import scorefile
from vpeval.errors import DataError
from vpeval.scorefile import read_score_file

LINES = 200_000
# Kept: 8 (score) + 1 (label) + 4 (gender) + 8 + 8 (the ids: pointers to shared strings) bytes a line; while
# reading, the id codes and the pairs' sort add about 25 more, and one block of text about 20 MB.
BYTES_PER_LINE = 120  # measured: 79 (the old reader: 511)


def _score_file(path, lines=LINES):
    rng = np.random.default_rng(0)
    values = rng.normal(size=lines)
    with open(path, "w") as handle:
        handle.writelines(
            f"libri_test-spk{k % 400:04d} libri_test-utt-{k // 400:07d} {values[k] + 2 * (k % 50 == 0):.6f} "
            f"{'target' if k % 50 == 0 else 'nontarget'} {'fm'[k % 2]}\n"
            for k in range(lines)
        )
    return values


def test_a_score_file_peaks_at_its_columns_not_its_text(tmp_path):
    path = tmp_path / "scores.txt"
    _score_file(path)
    tracemalloc.start()
    try:
        scores = read_score_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(scores) == LINES
    assert peak / LINES < BYTES_PER_LINE, f"{peak / LINES:.0f} bytes a line"


def test_the_columns_hold_what_the_lines_say(tmp_path):
    path = tmp_path / "scores.txt"
    _score_file(path, lines=2_000)
    scores = read_score_file(path)
    rows = [line.split() for line in path.read_text().splitlines()]
    assert scores.enroll_ids.tolist() == [r[0] for r in rows] == scores.enroll_speakers.tolist()
    assert scores.test_ids.tolist() == [r[1] for r in rows]
    assert scores.scores.tolist() == [float(r[2]) for r in rows]
    assert scores.targets.tolist() == [r[3] == "target" for r in rows]
    assert scores.genders.tolist() == [r[4] for r in rows]


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(scorefile, "_BLOCK", 100)  # a block ends mid-line: it is read on to the line's end


def test_blocks_that_end_mid_line_read_as_one_block(tmp_path, small_blocks):
    path = tmp_path / "scores.txt"
    _score_file(path, lines=300)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    rows = [line.split() for line in path.read_text(encoding="utf-8-sig").splitlines()]
    scores = read_score_file(path)
    assert scores.enroll_ids.tolist() == [r[0] for r in rows] and scores.test_ids.tolist() == [r[1] for r in rows]
    assert scores.scores.tolist() == [float(r[2]) for r in rows]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda rows: rows + [rows[3]], "scores.txt:301: the trial"),  # a repeat many blocks apart
        (lambda rows: rows[:250] + [rows[250].rsplit(" ", 1)[0]] + rows[251:], "scores.txt:251: it has 4 columns"),
        (lambda rows: rows[:200] + [rows[200].replace("target", "tar_get")] + rows[201:], "scores.txt:201: the label"),
        (lambda rows: rows[:299] + [rows[299] + "\x00"], "line 300 holds a NUL byte"),
    ],
)
def test_a_fault_in_a_later_block_names_its_line(tmp_path, small_blocks, change, message):
    path = tmp_path / "scores.txt"
    _score_file(path, lines=300)
    path.write_text("\n".join(change(path.read_text().splitlines())) + "\n")
    with pytest.raises(DataError, match=message):
        read_score_file(path)


def test_a_file_with_cr_line_ends_past_the_block_limit_is_read_whole(tmp_path, small_blocks, monkeypatch):
    monkeypatch.setattr(scorefile, "MAX_LINE_CHARS", 50)  # no "\n" within a block and its read-on: the slow path
    path = tmp_path / "scores.txt"
    _score_file(path, lines=300)
    rows = [line.split() for line in path.read_text().splitlines()]
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    scores = read_score_file(path)
    assert scores.test_ids.tolist() == [r[1] for r in rows] and scores.scores.tolist() == [float(r[2]) for r in rows]
