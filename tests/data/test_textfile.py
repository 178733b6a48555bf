"""The one reader of user text files (vpeval.data.textfile): every kind of bad bytes, one sentence each.

Each case failed before the reader existed in at least one of the readers that now use it: a BOM
became part of the first id, Latin-1 bytes raised a UnicodeDecodeError traceback, a CSV field over
131072 characters raised csv's field-limit error, an unclosed quote swallowed the lines after it, and
a JSON key given twice kept its last value in silence.
"""

import json
import os

import pytest

from vpeval.data import textfile
from vpeval.data.textfile import (
    MAX_LINE_CHARS,
    BadNumber,
    TextFileError,
    file_problem,
    read_csv,
    read_jsonl,
    read_lines,
    read_table,
    read_text,
    real_number,
    whole_number,
)
from vpeval.errors import DataError


def _bytes(tmp_path, data: bytes, name="f.txt"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _refused(call, *fragments, line=None):
    with pytest.raises(TextFileError) as err:
        call()
    message = str(err.value)
    assert isinstance(err.value, DataError) and "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message
    if line is not None:
        assert err.value.line == line, message
    return message


# -- encodings and line ends --------------------------------------------------------------------------


def test_a_utf8_bom_is_dropped_from_the_first_id(tmp_path):
    path = _bytes(tmp_path, "\ufeffutt1 spk1\nutt2 spk2\n".encode())
    assert [r.fields for r in read_table(path, ("utt-id", "speaker-id"))] == [("utt1", "spk1"), ("utt2", "spk2")]
    csv_path = _bytes(tmp_path, "\ufeffpath,speaker\na.wav,x\n".encode(), "m.csv")
    assert read_csv(csv_path)[0] == ["path", "speaker"]
    jsonl = _bytes(tmp_path, '\ufeff{"path": "a.wav"}\n'.encode(), "m.jsonl")
    assert read_jsonl(jsonl) == [(1, {"path": "a.wav"})]


def test_a_bom_inside_the_file_is_refused_with_its_line(tmp_path):
    path = _bytes(tmp_path, "utt1 spk1\n\ufeffutt2 spk2\n".encode())
    _refused(lambda: read_lines(path), f"{path} line 2 holds a byte-order mark", line=2)


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_non_utf8_bytes_name_the_line_the_byte_and_its_offset(tmp_path, encoding):
    path = _bytes(tmp_path, "utt1 spk1\nutt2 José\n".encode(encoding))
    message = _refused(lambda: read_table(path, ("utt-id", "speaker-id")), f"{path} line 2 is not UTF-8", line=2)
    assert "byte 0xe9 at byte offset 18 (column 9)" in message and "save the file as UTF-8" in message


def test_the_offset_counts_a_dropped_bom(tmp_path):
    path = _bytes(tmp_path, b"\xef\xbb\xbfab\xff\n")
    _refused(lambda: read_text(path), "byte 0xff at byte offset 5 (column 3)")


def test_utf16_is_named_as_such(tmp_path):
    path = _bytes(tmp_path, "utt1 spk1\n".encode("utf-16"))
    _refused(lambda: read_text(path), "is UTF-16 text; save it as UTF-8")


def test_nul_bytes_are_refused_with_their_line(tmp_path):
    path = _bytes(tmp_path, b"utt1 spk1\nutt2\x00 spk2\n")
    _refused(lambda: read_lines(path), f"{path} line 2 holds a NUL byte (at byte offset 14)", "binary", line=2)


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_crlf_and_cr_line_ends_read_as_lf(tmp_path, end):
    plain = read_table(_bytes(tmp_path, b"a x\n\nb y\n", "lf"), ("utt-id", "speaker-id"))
    other = read_table(_bytes(tmp_path, f"a x{end}{end}b y{end}".encode(), "other"), ("utt-id", "speaker-id"))
    assert other == plain == [(1, ("a", "x")), (3, ("b", "y"))]
    header, rows = read_csv(_bytes(tmp_path, f"path,speaker{end}a.wav,x{end}".encode(), "m.csv"))
    assert rows == [(2, {"path": "a.wav", "speaker": "x"})]


def test_blank_lines_are_skipped_but_keep_their_numbers(tmp_path):
    path = _bytes(tmp_path, b"\n  \na b\n\t\nc d")
    assert read_lines(path) == [(3, "a b"), (5, "c d")]


# -- what the path is ---------------------------------------------------------------------------------


def test_paths_that_are_no_regular_files_are_named_for_what_they_are(tmp_path):
    assert file_problem(tmp_path / "nope") == "does not exist"
    assert file_problem(tmp_path) == "is a folder, not a file"
    assert "device" in file_problem("/dev/null")
    _refused(lambda: read_text("/dev/null", "Manifest /dev/null"), "Manifest /dev/null is a device (such as /dev/null)")
    _refused(lambda: read_table(tmp_path, ("a", "b")), f"{tmp_path} is a folder, not a file")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    _refused(lambda: read_text(fifo), "is a named pipe (FIFO)")


# -- tables: columns, duplicates, sizes --------------------------------------------------------------------


def test_a_line_with_the_wrong_number_of_columns_names_the_line_and_the_columns(tmp_path):
    path = _bytes(tmp_path, b"a x\nb y z\n")
    message = _refused(
        lambda: read_table(path, ("utt-id", "speaker-id")), f"{path} line 2 reads 'b y z' (3 fields)", line=2
    )
    assert "expected 'utt-id speaker-id'" in message
    _refused(
        lambda: read_table(_bytes(tmp_path, b"spk\n"), ("speaker-id", "utt-id"), last="many"),
        "line 1 reads 'spk' (1 field); expected 'speaker-id utt-id ...'",
    )


def test_rest_keeps_the_rest_of_the_line_and_many_repeats_the_last_column(tmp_path):
    path = _bytes(tmp_path, b"u1 sox a.wav -t wav - |\nu2\n")
    assert read_table(path, ("utt-id", "text"), last="rest", empty_ok=True) == [
        (1, ("u1", "sox a.wav -t wav - |")),
        (2, ("u2", "")),
    ]
    _refused(lambda: read_table(path, ("utt-id", "path"), last="rest"), "line 2 reads 'u2'")
    assert read_table(_bytes(tmp_path, b"s a b c\n"), ("speaker-id", "utt-id"), last="many") == [
        (1, ("s", "a", "b", "c"))
    ]


def test_a_key_listed_twice_names_both_lines(tmp_path):
    path = _bytes(tmp_path, b"a x\nb y\n\na z\n")
    _refused(lambda: read_table(path, ("utt-id", "speaker-id")), f"{path} line 4 repeats a, already on line 1", line=4)
    assert len(read_table(path, ("utt-id", "speaker-id"), unique=False)) == 3


@pytest.mark.parametrize("data", [b"", b"\n \n\t\n"])
def test_an_empty_file_is_refused_unless_allowed(tmp_path, data):
    path = _bytes(tmp_path, data)
    _refused(lambda: read_table(path, ("utt-id", "speaker-id")), f"{path} is empty")
    assert read_table(path, ("utt-id", "speaker-id"), empty_ok=True) == []
    _refused(lambda: read_csv(path), f"{path} is empty")


def test_a_line_over_the_limit_is_refused_with_its_line(tmp_path):
    path = _bytes(tmp_path, b"a b\n" + b"c " + b"x" * MAX_LINE_CHARS + b"\n")
    _refused(lambda: read_lines(path), f"{path} line 2 is {MAX_LINE_CHARS + 2} characters long", line=2)


# -- CSV -----------------------------------------------------------------------------------------------


def test_a_csv_field_longer_than_csvs_own_limit_is_read(tmp_path):
    long = "w" * 200_000  # csv's default field_size_limit is 131072
    path = _bytes(tmp_path, f'path,speaker,transcript\na.wav,x,"{long}"\n'.encode(), "m.csv")
    assert read_csv(path)[1][0][1]["transcript"] == long


def test_a_column_named_twice_is_refused(tmp_path):
    path = _bytes(tmp_path, b"path,speaker, Path \na.wav,x,b.wav\n", "m.csv")
    _refused(lambda: read_csv(path), f"{path} line 1 names the column 'path' twice (columns 1 and 3)", line=1)


def test_an_unclosed_quote_does_not_swallow_the_lines_after_it(tmp_path):
    lines = (
        ["path,speaker"] + [f"{k}.wav,spk{k % 3}" for k in range(17)] + ['"18.wav,spk0', "19.wav,spk1", '20.wav",spk2']
    )
    path = _bytes(tmp_path, ("\n".join(lines) + "\n").encode(), "m.csv")
    _refused(lambda: read_csv(path), f"{path} line 19 opens a quoted field that does not close on that line", line=19)


def test_a_quote_inside_a_quoted_field_must_be_doubled(tmp_path):
    path = _bytes(tmp_path, b'path,speaker\n"a.wav"x,spk\n', "m.csv")
    _refused(lambda: read_csv(path), f"{path} line 2 is not valid CSV", line=2)
    ok = _bytes(tmp_path, b'path,speaker\n"a ""b"".wav",spk\n', "ok.csv")
    assert read_csv(ok)[1] == [(2, {"path": 'a "b".wav', "speaker": "spk"})]


@pytest.mark.parametrize("line, more", [("a.wav", "fewer"), ("a.wav,x,y", "more")])
def test_csv_rows_need_one_field_per_column(tmp_path, line, more):
    path = _bytes(tmp_path, f"path,speaker\n{line}\n".encode(), "m.csv")
    _refused(lambda: read_csv(path), f"line 2 has {more} fields than the header", "path, speaker", line=2)


def test_tsv_uses_tabs(tmp_path):
    path = _bytes(tmp_path, b"path\tspeaker\na,b.wav\tx\n", "m.tsv")
    assert read_csv(path, delimiter="\t")[1] == [(2, {"path": "a,b.wav", "speaker": "x"})]


# -- JSON Lines -----------------------------------------------------------------------------------------


def test_a_key_given_twice_is_refused(tmp_path):
    path = _bytes(tmp_path, b'{"path": "a.wav", "speaker": "x"}\n{"path": "b.wav", "speaker": "x", "speaker": "y"}\n')
    _refused(lambda: read_jsonl(path), f"{path} line 2 gives the key 'speaker' twice", line=2)
    nested = _bytes(tmp_path, b'{"path": "a.wav", "extra": {"k": 1, "k": 2}}\n', "n.jsonl")
    _refused(lambda: read_jsonl(nested), "gives the key 'k' twice")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_no_json(tmp_path, constant):
    path = _bytes(tmp_path, f'{{"duration_s": {constant}}}\n'.encode())
    _refused(lambda: read_jsonl(path), f"line 1 holds {constant}, which is not a JSON number", line=1)


@pytest.mark.parametrize(
    "line, kind", [('[{"path": "a.wav"}]', "an array"), ('"a.wav"', "a string"), ("3", "a number"), ("null", "null")]
)
def test_each_line_must_be_an_object(tmp_path, line, kind):
    path = _bytes(tmp_path, f"{line}\n".encode())
    _refused(lambda: read_jsonl(path), f"line 1 is {kind}, not a JSON object", line=1)


def test_invalid_json_names_the_line_and_column(tmp_path):
    path = _bytes(tmp_path, b'{"path": "a.wav"}\n{"path": "b.wav",}\n')
    _refused(lambda: read_jsonl(path), f"{path} line 2 is not valid JSON", "column", line=2)


# -- numbers -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "1e400", "nan", "NaN", "-inf", 1e400, float("nan"), "Infinity"])
def test_numbers_must_be_finite(value):
    with pytest.raises(BadNumber):
        real_number(value)
    with pytest.raises(BadNumber):
        whole_number(value)


@pytest.mark.parametrize("value", ["1_000", "0x10", "١٢", "", " ", "3 s", True, False, None, [1], {"a": 1}])
def test_only_plain_numbers_are_numbers(value):
    with pytest.raises(BadNumber):
        real_number(value)


@pytest.mark.parametrize("value", ["-0.5", "0.5", 1.5, "16000.5"])
def test_whole_numbers_have_no_fraction(value):
    with pytest.raises(BadNumber, match="not a whole number"):
        whole_number(value)


def test_plain_numbers_are_read_as_written():
    assert [real_number(v) for v in ["1.5", " -2 ", "+.5", "7.", "1E-2", 3, 2.25]] == [
        1.5,
        -2.0,
        0.5,
        7.0,
        0.01,
        3.0,
        2.25,
    ]
    assert [whole_number(v) for v in ["16000", "16000.0", 16000.0, 8000, "-1", "1e3"]] == [
        16000,
        16000,
        16000,
        8000,
        -1,
        1000,
    ]
    assert isinstance(whole_number(10**30), int)


def test_the_csv_limit_is_raised_never_lowered(tmp_path):
    import csv

    before = csv.field_size_limit()
    read_csv(_bytes(tmp_path, b"path,speaker\na.wav,x\n", "m.csv"))
    assert csv.field_size_limit() == max(before, textfile.MAX_LINE_CHARS)


def test_json_rows_keep_their_values_and_numbers(tmp_path):
    rows = [{"path": "a.wav", "speaker": "x", "session": 3}, {"path": "b.wav", "speaker": "y", "duration_s": 1.5}]
    path = _bytes(tmp_path, ("\n".join(json.dumps(r) for r in rows) + "\n\n").encode())
    assert read_jsonl(path) == [(1, rows[0]), (2, rows[1])]
