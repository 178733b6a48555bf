"""Score files read through vpeval.data.textfile, by read_score_file and by `vpeval metrics --scores`.

Before, a BOM became part of the first enroll id, Latin-1 bytes gave "cannot be read ('utf-8' codec
can't decode ...)" without the line, and /dev/null read as a file with no trials.
"""

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from vpeval.cli import main
from vpeval.errors import DataError
from vpeval.scorefile import read_score_file


def _lines(n=200, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        target = i % 4 == 0
        out.append(
            f"spk{i % 10} utt{i} {rng.normal() + 2.0 * target:.4f} {'target' if target else 'nontarget'} "
            f"{'fm'[(i // 4) % 2]}"
        )
    return out


def _write(tmp_path, data: bytes, name="scores.txt"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _same(a, b):
    assert a.scores.tolist() == b.scores.tolist() and a.targets.tolist() == b.targets.tolist()
    assert a.enroll_ids.tolist() == b.enroll_ids.tolist() and a.test_ids.tolist() == b.test_ids.tolist()
    assert a.genders.tolist() == b.genders.tolist()


def test_a_bom_and_crlf_read_as_the_plain_file(tmp_path):
    text = "\n".join(_lines()) + "\n"
    plain = read_score_file(_write(tmp_path, text.encode(), "plain.txt"))
    other = read_score_file(_write(tmp_path, b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode()))
    _same(plain, other)
    assert other.enroll_ids[0] == "spk0"


def test_latin1_names_the_line_and_byte(tmp_path):
    lines = _lines(5)
    lines[3] = lines[3].replace("utt3", "utt\xe93")
    path = _write(tmp_path, ("\n".join(lines) + "\n").encode("latin-1"))
    with pytest.raises(DataError, match=rf"Score file {path} line 4 is not UTF-8: byte 0xe9 .* save the file as UTF-8"):
        read_score_file(path)


def test_nul_bytes_and_devices_are_refused(tmp_path):
    path = _write(tmp_path, ("\n".join(_lines(3)) + "\n\x00\x00").encode())
    with pytest.raises(DataError, match=rf"Score file {path} line 4 holds a NUL byte"):
        read_score_file(path)
    with pytest.raises(DataError, match=r"Score file /dev/null is a device"):
        read_score_file("/dev/null")
    with pytest.raises(DataError, match=rf"Score file {tmp_path} is a folder, not a file"):
        read_score_file(tmp_path)


def _metrics(path):
    return CliRunner().invoke(main, ["metrics", "--scores", str(path), "--bootstrap", "0", "--json"])


def test_the_command_line_gives_the_same_numbers_for_a_bom_file_and_one_sentence_for_latin1(tmp_path):
    text = "\n".join(_lines()) + "\n"
    plain = _metrics(_write(tmp_path, text.encode(), "plain.txt"))
    assert plain.exit_code == 0, plain.output
    bom = _metrics(_write(tmp_path, b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode(), "bom.txt"))
    assert bom.exit_code == 0 and json.loads(bom.output) == json.loads(plain.output)
    bad = _write(tmp_path, text.replace("utt7 ", "utt\xe97 ").encode("latin-1"), "latin.txt")
    result = _metrics(bad)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.startswith(f"Error: Score file {bad} line 8 is not UTF-8")
    assert len(result.output.strip().splitlines()) == 1


def test_huge_scores_print_in_exponent_form(tmp_path):
    from click.testing import CliRunner

    from vpeval.cli import main

    path = tmp_path / "scores.txt"
    path.write_text("a x 1e300 target\na y 2e300 nontarget\nb z 3e300 target\nb w -1e300 nontarget\n")
    result = CliRunner().invoke(main, ["metrics", "--scores", str(path), "--metric", "eer-step"])
    assert result.exit_code == 0, result.output
    table = " ".join(result.stdout.splitlines()[1:])  # below the header line, which names the file
    assert not re.search(r"[0-9]{20}", table)  # not 300-digit fixed-point thresholds
    assert "e+300" in result.stdout
