"""Kaldi data folders read through vpeval.data.textfile: each case passed in silence, or as a traceback, before.

A BOM became part of the first utterance id, Latin-1 text raised UnicodeDecodeError, spk2utt was not
compared with utt2spk, spk2gender could give a speaker two genders, utt2dur took NaN and 100 s for a
0.15 s file, an ark offset in wav.scp read as a missing file, and an utterance repeated in utt2spk
silently took the last speaker.
"""

import os

import pytest
import soundfile as sf

from vpeval.data.kaldi import numbered_trials, read_data_dir, write_data_dir
from vpeval.errors import DataError
from vpeval.testing.dummies import make_corpus


@pytest.fixture
def folder(tmp_path):
    corpus = make_corpus(tmp_path / "wav", speakers=2, utterances=3, seconds=0.15)
    return write_data_dir(corpus, tmp_path / "data" / "set")


def _lines(path):
    return path.read_text().splitlines()


def _write(path, lines, end="\n"):
    path.write_text("".join(line + end for line in lines))


def _refused(folder, *fragments):
    with pytest.raises(DataError) as err:
        read_data_dir(folder)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def _fields(corpus):
    return [(u.id, u.speaker, u.path, u.gender, u.transcript, u.emotion, u.duration) for u in corpus]


def test_a_bom_and_crlf_line_ends_read_as_the_plain_files_do(folder):
    plain = read_data_dir(folder)
    for name in ("wav.scp", "utt2spk", "spk2utt", "spk2gender", "text", "utt2emo", "utt2dur"):
        path = folder / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    again = read_data_dir(folder)
    assert _fields(again) == _fields(plain) and again.speaker_gender == plain.speaker_gender
    assert not any("\ufeff" in u.id or "\r" in (u.transcript or "") for u in again)


def test_latin1_text_names_the_file_line_and_byte(folder):
    text = _lines(folder / "text")
    (folder / "text").write_bytes(("\n".join(text[:1] + [text[1] + " café"]) + "\n").encode("latin-1"))
    _refused(folder, f"{folder / 'text'} line 2 is not UTF-8", "byte 0xe9", "save the file as UTF-8")


def test_a_nul_byte_names_the_line(folder):
    (folder / "utt2spk").write_bytes((folder / "utt2spk").read_bytes().replace(b"\n", b"\x00\n", 2))
    _refused(folder, f"{folder / 'utt2spk'} line 1 holds a NUL byte")


def test_an_utterance_listed_twice_in_utt2spk_is_refused_with_both_lines(folder):
    lines = _lines(folder / "utt2spk")
    utt = lines[0].split()[0]
    _write(folder / "utt2spk", lines + [f"{utt} spk001"])
    (folder / "spk2utt").unlink()
    _refused(folder, f"utt2spk line {len(lines) + 1} repeats {utt}, already on line 1")


def test_spk2utt_that_contradicts_utt2spk_is_refused(folder):
    spk2utt = _lines(folder / "spk2utt")
    first, second = spk2utt[0].split(), spk2utt[1].split()
    moved = first.pop()  # the last utterance of speaker 0 listed under speaker 1
    _write(folder / "spk2utt", [" ".join(first), " ".join(second + [moved])])
    _refused(
        folder, f"gives {moved} the speaker {first[0]}, but {folder / 'spk2utt'} line 2 lists it under {second[0]}"
    )


def test_an_utterance_under_two_speakers_in_spk2utt_is_refused(folder):
    (folder / "utt2spk").unlink()
    spk2utt = _lines(folder / "spk2utt")
    utt = spk2utt[0].split()[1]
    _write(folder / "spk2utt", [spk2utt[0], spk2utt[1] + f" {utt}"])
    _refused(folder, f"lists the utterance {utt} under speaker spk000 and under spk001 (lines 1 and 2)")


def test_spk2utt_alone_still_gives_the_speakers(folder):
    plain = read_data_dir(folder)
    (folder / "utt2spk").unlink()
    assert _fields(read_data_dir(folder)) == _fields(plain)


def test_a_speaker_with_two_genders_is_refused(folder):
    lines = _lines(folder / "spk2gender")
    spk, g = lines[0].split()
    _write(folder / "spk2gender", lines + [f"{spk} {'m' if g == 'f' else 'f'}"])
    _refused(folder, f"gives speaker {spk} gender {g} on line 1 and")


def test_a_speaker_without_a_gender_is_refused_with_the_count(folder):
    _write(folder / "spk2gender", [])
    _refused(folder, "gives no gender for speaker spk000 (and 1 more of the folder's 2 speakers)")
    _write(folder / "spk2gender", ["spk000 f"])
    _refused(folder, "gives no gender for speaker spk001;")


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e400", "1,5", "long"])
def test_utt2dur_must_be_a_finite_positive_number(folder, value):
    lines = _lines(folder / "utt2dur")
    utt = lines[1].split()[0]
    _write(folder / "utt2dur", [lines[0], f"{utt} {value}"] + lines[2:])
    _refused(folder, f"{folder / 'utt2dur'} line 2 gives {utt} the duration")


def test_utt2dur_is_checked_against_the_header(folder):
    lines = _lines(folder / "utt2dur")
    utt = lines[0].split()[0]
    info = sf.info(read_data_dir(folder)[utt].path)
    seconds = info.frames / info.samplerate
    _write(folder / "utt2dur", [f"{utt} 100"] + lines[1:])
    _refused(folder, f"{folder / 'utt2dur'} line 1 gives the duration 100 s", f"lasts {seconds:.3f} s by its header")
    _write(folder / "utt2dur", [f"{utt} {seconds + 0.01:.2f}"] + lines[1:])  # rounding is no contradiction
    assert read_data_dir(folder)[utt].duration == float(f"{seconds + 0.01:.2f}")


def test_an_ark_offset_is_named_as_one_not_as_a_missing_file(folder, tmp_path):
    lines = _lines(folder / "wav.scp")
    utt = lines[1].split()[0]
    (tmp_path / "feats.ark").write_bytes(b"\x00" * 64)
    for written in (f"{tmp_path / 'feats.ark'}:1234", "data/raw_mfcc.ark:42", f"{tmp_path / 'feats.ark'}:12[0:99]"):
        _write(folder / "wav.scp", [lines[0], f"{utt} {written}"] + lines[2:])
        message = _refused(folder, f"wav.scp line 2 names '{written}', a Kaldi archive offset", "wav-copy")
        assert "does not exist" not in message
    _write(folder / "wav.scp", [lines[0], f"{utt} -"] + lines[2:])
    _refused(folder, "wav.scp line 2 names '-', a Kaldi extended filename")


def test_dev_null_in_wav_scp_is_named_a_device(folder):
    lines = _lines(folder / "wav.scp")
    _write(folder / "wav.scp", [lines[0], f"{lines[1].split()[0]} /dev/null"] + lines[2:])
    _refused(folder, "wav.scp line 2 names /dev/null, which is a device (such as /dev/null), not an audio file")


def test_a_file_listed_twice_in_wav_scp_is_refused(folder):
    lines = _lines(folder / "wav.scp")
    _write(folder / "wav.scp", [lines[0], f"{lines[1].split()[0]} {lines[0].split()[1]}"] + lines[2:])
    _refused(folder, "wav.scp line 2 lists", "which line 1 lists already")


def test_empty_and_odd_files(folder, tmp_path):
    _write(folder / "wav.scp", [])
    _refused(folder, f"{folder / 'wav.scp'} is empty")
    (tmp_path / "plain").write_text("x")
    with pytest.raises(DataError, match="Data folder .*plain is a file, not a folder"):
        read_data_dir(tmp_path / "plain")


def test_a_folder_named_text_is_refused_not_ignored(folder):
    (folder / "text").unlink()
    (folder / "text").mkdir()
    _refused(folder, f"{folder / 'text'} is a folder, not a file")


def test_an_empty_optional_file_is_as_good_as_none(folder):
    plain = read_data_dir(folder)
    _write(folder / "utt2emo", [])
    assert [u.emotion for u in read_data_dir(folder)] == [None] * len(plain)


def test_a_partly_gendered_corpus_is_written_without_spk2gender_and_reads_back(tmp_path):
    corpus = make_corpus(tmp_path / "wav", speakers=2, utterances=2, seconds=0.15)
    corpus.utterances = [u.replace(gender=None) if u.speaker == "spk001" else u for u in corpus.utterances]
    corpus.speaker_gender = {"spk000": corpus.speaker_gender["spk000"]}
    folder = write_data_dir(corpus, tmp_path / "out")
    assert not (folder / "spk2gender").exists()
    assert all(u.gender is None for u in read_data_dir(folder))


def test_trials_files_are_read_through_the_same_reader(tmp_path):
    path = tmp_path / "trials"
    path.write_bytes("\ufeffspk1 u1 target\r\nspk1 u2 nontarget\r\n".encode())
    assert numbered_trials(path) == [(1, "spk1", "u1", True), (2, "spk1", "u2", False)]
    path.write_bytes(b"spk1 u1 target\nspk\xe9 u2 nontarget\n")
    with pytest.raises(DataError, match=r"trials line 2 is not UTF-8"):
        numbered_trials(path)
    path.write_text("\n\n")
    with pytest.raises(DataError, match=r"Trials file .*trials is empty"):
        numbered_trials(path)
    with pytest.raises(DataError, match=r"Trials file /dev/null is a device"):
        numbered_trials("/dev/null")


def test_a_declared_duration_of_a_missing_file_is_left_to_the_scan(folder):
    lines = _lines(folder / "wav.scp")
    utt, path = lines[0].split()
    _write(folder / "utt2dur", [f"{utt} 100"] + _lines(folder / "utt2dur")[1:])
    os.unlink(path)
    assert read_data_dir(folder)[utt].duration == 100.0  # the scan refuses (or skips) the missing file
