"""Trial and side lists (vpeval.data.plan.read_sides / read_trial_list) read through vpeval.data.textfile.

Before, a `target` trial between two speakers (or a `nontarget` one within a speaker) was scored
with the wrong label, a trial listed twice counted twice, a side listed twice kept its last line,
and a BOM made the first side id unknown.
"""

import pytest

from vpeval.data.plan import read_sides, read_trial_list
from vpeval.errors import DataError
from vpeval.types import Corpus, Utterance

CORPUS = Corpus("c", [Utterance(f"{s}{k}", s, f"/audio/{s}{k}.wav", gender="f") for s in "AB" for k in range(3)])
SIDES = ["eA A0", "eB B0", "tA A1", "tB B1"]


def _files(tmp_path, trials, sides=None):
    sides_path = tmp_path / "sides"
    sides_path.write_text("\n".join(sides or SIDES) + "\n")
    trials_path = tmp_path / "trials"
    trials_path.write_text("\n".join(trials) + "\n")
    return trials_path, sides_path


def _refused(tmp_path, trials, *fragments, sides=None):
    paths = _files(tmp_path, trials, sides)
    with pytest.raises(DataError) as err:
        read_trial_list(*paths, CORPUS, 1)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_a_consistent_list_is_read(tmp_path):
    trials = read_trial_list(*_files(tmp_path, ["eA tA target", "eA tB nontarget", "eB tB target"]), CORPUS, 1).trials
    assert [(t.enroll, t.test, t.target, t.enroll_speaker, t.test_speaker) for t in trials] == [
        (("A0",), ("A1",), True, "A", "A"),
        (("A0",), ("B1",), False, "A", "B"),
        (("B0",), ("B1",), True, "B", "B"),
    ]


def test_labels_that_contradict_the_speakers_are_refused_with_a_count_and_the_first_line(tmp_path):
    message = _refused(
        tmp_path,
        ["eA tA target", "eA tB target", "eB tB nontarget"],
        "trials line 2 labels 'eA tB' target, but corpus c gives the sides the speakers A and B",
        "(2 trials are mislabelled; this is the first)",
    )
    assert "correct the labels" in message
    _refused(
        tmp_path, ["eB tB nontarget"], "line 1 labels 'eB tB' nontarget, but corpus c gives the sides one speaker, B"
    )


def test_a_trial_listed_twice_is_refused(tmp_path):
    _refused(
        tmp_path,
        ["eA tA target", "eA tB nontarget", "", "eA tA target"],
        "trials line 4 repeats the trial 'eA tA' of line 1",
    )


def test_a_side_listed_twice_or_holding_an_utterance_twice_is_refused(tmp_path):
    _refused(tmp_path, ["eA tA target"], "sides line 5 repeats eA, already on line 1", sides=SIDES + ["eA A2"])
    _refused(
        tmp_path,
        ["eA tA target"],
        "sides line 1 lists the utterance A0 twice in side eA",
        sides=["eA A0 A0"] + SIDES[1:],
    )


def test_a_side_of_two_speakers_is_refused(tmp_path):
    _refused(
        tmp_path, ["eA tA target"], "side eA holds utterances of more than one speaker", sides=["eA A0 B2"] + SIDES[1:]
    )


def test_bom_and_crlf_are_read_as_plain_files(tmp_path):
    trials, sides = _files(tmp_path, ["eA tA target"])
    sides.write_bytes(b"\xef\xbb\xbf" + sides.read_bytes().replace(b"\n", b"\r\n"))
    trials.write_bytes(b"\xef\xbb\xbf" + trials.read_bytes().replace(b"\n", b"\r\n"))
    assert read_sides(sides)["eA"] == ("A0",)
    assert len(read_trial_list(trials, sides, CORPUS, 1).trials) == 1


def test_non_utf8_and_empty_files_name_the_file(tmp_path):
    trials, sides = _files(tmp_path, ["eA tA target"])
    sides.write_bytes(b"eA A0\ne\xe9 A1\n")
    with pytest.raises(DataError, match=r"sides line 2 is not UTF-8"):
        read_sides(sides)
    sides.write_text("")
    with pytest.raises(DataError, match=r"sides is empty"):
        read_sides(sides)
    with pytest.raises(DataError, match=r"sides line 1 reads 'eA' \(1 field\); expected 'side-id utt-id \.\.\.'"):
        sides.write_text("eA\n")
        read_sides(sides)
