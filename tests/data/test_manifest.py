import json

import pytest

from vpeval.data.manifest import read_manifest
from vpeval.errors import DataError

from .conftest import REAL, needs_real


@needs_real("fsdd")
def test_fsdd_manifest_loads_with_resolved_paths_and_labels():
    corpus = read_manifest(REAL / "fsdd" / "metadata.csv")
    assert len(corpus) == 3000 and len(corpus.speakers) == 6
    u = corpus.utterances[0]
    assert u.path.startswith(str(REAL / "fsdd" / "wav")) and u.sample_rate == 8000
    assert u.gender == "m" and u.transcript in {
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
    }
    assert all(u.id.startswith(u.speaker) for u in corpus)  # Kaldi-sortable ids
    assert corpus.gender_of("george") == "m"


@needs_real("vctk_autovc")
def test_vctk_manifest_loads_without_genders_or_transcripts():
    corpus = read_manifest(REAL / "vctk_autovc" / "metadata.csv")
    assert len(corpus) == 40 and corpus.speakers == ["p225", "p226", "p227", "p228"]
    assert corpus["p225_003"].duration == pytest.approx(6.01)
    assert all(u.gender is None and u.transcript is None for u in corpus)


def test_jsonl_normalises_gender_and_resolves_against_root(tmp_path):
    rows = [
        {"path": "a/1.wav", "speaker": "x", "gender": "Female", "emotion": "sad", "session": 3},
        {"path": "/abs/2.wav", "speaker": "x", "gender": "F", "transcript": "hi there", "id": "custom"},
        {"path": "b/1.wav", "speaker": "y", "gender": "male", "sample_rate": 16000, "duration_s": 1.5},
    ]
    manifest = tmp_path / "m.jsonl"
    manifest.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    corpus = read_manifest(manifest, root=tmp_path / "audio")
    assert [u.id for u in corpus] == ["x-1", "custom", "y-1"]
    assert [u.gender for u in corpus] == ["f", "f", "m"]
    assert corpus["x-1"].path == str(tmp_path / "audio" / "a" / "1.wav") and corpus["x-1"].session == "3"
    assert corpus["custom"].path == "/abs/2.wav" and corpus["custom"].transcript == "hi there"
    assert corpus["y-1"].sample_rate == 16000 and corpus["y-1"].duration == 1.5


def test_same_file_name_in_two_folders_gets_distinct_ids(tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,speaker\ns1/001.wav,spk\ns2/001.wav,spk\ns1/002.wav,spk\n")
    assert [u.id for u in read_manifest(manifest)] == ["spk-s1-001", "spk-s2-001", "spk-002"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("file,speaker\na.wav,x\n", r"m\.csv has no 'path' column"),
        ("path,speaker\na.wav,x\nb.wav,\n", r"m\.csv line 3 has an empty 'speaker'"),
        ("path,speaker,gender\na.wav,x,robot\n", r"m\.csv line 2 has gender 'robot'"),
        ("path,speaker,duration_s\na.wav,x,long\n", r"m\.csv line 2 has duration_s 'long'"),
        ("path,speaker,id\na.wav,x,u1\nb.wav,y,u1\n", r"m\.csv lines 2 and 3 have the same utterance id u1"),
        ("path,speaker\na.wav,x\na.wav,x\n", r"lines 2 and 3 .* the same file"),
        ("path,speaker,gender\na.wav,x,m\nb.wav,x,f\n", r"speaker x gender m on line 2 and f on line 3"),
        ("path,speaker\na.wav,x,extra\n", r"m\.csv line 2 has more fields than the header"),
    ],
)
def test_bad_csv_names_file_and_line(tmp_path, text, expected):
    manifest = tmp_path / "m.csv"
    manifest.write_text(text)
    with pytest.raises(DataError, match=expected):
        read_manifest(manifest)


def test_bad_jsonl_names_file_and_line(tmp_path):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"path": "a.wav", "speaker": "x"}\n{"path": "b.wav"\n')
    with pytest.raises(DataError, match=r"m\.jsonl line 2 is not valid JSON"):
        read_manifest(manifest)
    manifest.write_text('{"path": "a.wav", "speaker": "x"}\n{"path": "b.wav"}\n')
    with pytest.raises(DataError, match=r"m\.jsonl line 2 has no 'speaker'"):
        read_manifest(manifest)


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "m.xlsx").write_text("x")
    with pytest.raises(DataError, match="neither .csv"):
        read_manifest(tmp_path / "m.xlsx")
    with pytest.raises(DataError, match="does not exist"):
        read_manifest(tmp_path / "nope.csv")


def test_a_folder_named_like_a_wav_names_the_line(tmp_path):
    (tmp_path / "x.wav").mkdir()
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,speaker\nx.wav,spk\n")
    with pytest.raises(
        DataError, match=rf"Manifest {manifest} line 2 names .*x\.wav, which is a folder, not an audio file"
    ):
        read_manifest(manifest)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("path,speaker,id\na.wav,x,utt one\n", r"line 2 has the id 'utt one', which holds whitespace"),
        ("path,speaker\na.wav,x\nb.wav,spk two\n", r"line 3 has the speaker 'spk two', which holds whitespace"),
    ],
)
def test_ids_and_speakers_with_spaces_are_refused_at_load_with_the_line(tmp_path, text, expected):
    manifest = tmp_path / "m.csv"
    manifest.write_text(text)
    with pytest.raises(DataError, match=expected):
        read_manifest(manifest)


def test_the_corpus_remembers_each_utterances_line(tmp_path):
    manifest = tmp_path / "m.csv"
    manifest.write_text('path,speaker\n"a.wav",x\n"b.wav",y\n')
    corpus = read_manifest(manifest)
    assert corpus.info["origin"] == {"x-a": f"Manifest {manifest} line 2", "y-b": f"Manifest {manifest} line 3"}
