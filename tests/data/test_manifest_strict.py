"""CSV and JSONL manifests read through vpeval.data.textfile, through read_manifest and the command line.

Before, `"speaker": ["george"]` became a speaker named "['george']", sample_rate 1e400 an OverflowError
traceback, channel -0.5 the channel 0, a duration_s of 100 for a 0.5 s file was kept, a repeated JSON
key kept its last value, a column named twice its last column, an unclosed quote on line 19 swallowed
lines 20 and 21, and Latin-1 bytes raised UnicodeDecodeError.
"""

import json

import numpy as np
import pytest
import soundfile as sf
from click.testing import CliRunner

from vpeval.cli import main
from vpeval.data.manifest import read_manifest
from vpeval.errors import DataError

RATE = 16000


@pytest.fixture
def wavs(tmp_path):
    """Four 0.5 s mono files a0..a3 (and a stereo b.wav) under tmp_path/audio."""
    folder = tmp_path / "audio"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for k in range(4):
        sf.write(folder / f"a{k}.wav", 0.1 * rng.standard_normal(RATE // 2).astype(np.float32), RATE, subtype="PCM_16")
    sf.write(folder / "b.wav", 0.1 * rng.standard_normal((RATE // 2, 2)).astype(np.float32), RATE, subtype="PCM_16")
    return folder


def _csv(tmp_path, lines, name="m.csv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _jsonl(tmp_path, rows, name="m.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _refused(path, *fragments, **kwargs):
    with pytest.raises(DataError) as err:
        read_manifest(path, **kwargs)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


# -- types -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "column, value, kind",
    [
        ("speaker", ["george"], "a list"),
        ("speaker", {"name": "george"}, "an object"),
        ("speaker", True, "the boolean true"),
        ("speaker", 1.5, "a number"),
        ("path", 3, "a number"),
        ("gender", ["m"], "a list"),
        ("transcript", ["zero"], "a list"),
        ("id", False, "the boolean false"),
        ("sample_rate", True, "the boolean true"),
        ("duration_s", [0.5], "a list"),
    ],
)
def test_a_jsonl_value_of_the_wrong_type_is_refused(tmp_path, column, value, kind):
    row = {"path": "a0.wav", "speaker": "george", column: value}
    path = _jsonl(tmp_path, [{"path": "a1.wav", "speaker": "x"}, row])
    _refused(path, f"Manifest {path} line 2 gives {column} {json.dumps(value)}, {kind}")


def test_null_means_not_given_but_not_for_required_columns(tmp_path):
    path = _jsonl(
        tmp_path, [{"path": "a0.wav", "speaker": "x", "gender": None, "transcript": None, "duration_s": None}]
    )
    u = read_manifest(path).utterances[0]
    assert (u.gender, u.transcript, u.duration) == (None, None, None)
    _refused(_jsonl(tmp_path, [{"path": "a0.wav", "speaker": None}]), "line 1 gives speaker null")


def test_whole_json_numbers_are_ids_as_before(tmp_path):
    corpus = read_manifest(_jsonl(tmp_path, [{"path": "a0.wav", "speaker": 19, "id": 7, "session": 3}]))
    assert [(u.id, u.speaker, u.session) for u in corpus] == [("7", "19", "3")]


def test_a_key_given_twice_is_refused(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"path": "a0.wav", "speaker": "x", "speaker": "y"}\n')
    _refused(path, f"Manifest {path} line 1 gives the key 'speaker' twice")
    path.write_text('{"path": "a0.wav", "speaker": "x", "Speaker": "y"}\n')
    _refused(path, f"Manifest {path} line 1 gives 'speaker' twice")


def test_a_column_named_twice_is_refused(tmp_path):
    path = _csv(tmp_path, ["path,speaker,Speaker", "a0.wav,x,y"])
    _refused(path, f"Manifest {path} line 1 names the column 'speaker' twice")


# -- numbers ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "column, value, reason",
    [
        ("sample_rate", "inf", "is not finite"),
        ("sample_rate", "1e400", "is not finite"),
        ("sample_rate", "nan", "is not finite"),
        ("sample_rate", "16000.5", "is not a whole number"),
        ("sample_rate", "0", "out of range"),
        ("sample_rate", "-16000", "out of range"),
        ("duration_s", "nan", "is not finite"),
        ("duration_s", "inf", "is not finite"),
        ("duration_s", "-1", "out of range"),
        ("duration_s", "0", "out of range"),
        ("duration_s", "1_000", "is not a number"),
        ("channel", "-0.5", "is not a whole number"),
        ("channel", "-1", "out of range"),
        ("channel", "0.5", "is not a whole number"),
    ],
)
def test_numbers_must_be_finite_whole_and_in_range(tmp_path, column, value, reason):
    path = _csv(tmp_path, [f"path,speaker,{column}", "a0.wav,x,", f"a1.wav,x,{value}"])
    _refused(
        path,
        f"Manifest {path} line 3 has {column} '{value}', which"
        if "range" not in reason
        else f"line 3 has {column} '{value}', out of range",
        reason,
    )


def test_json_numbers_beyond_the_float_range_are_refused(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"path": "a0.wav", "speaker": "x", "sample_rate": 1e400}\n')
    _refused(path, "line 1 has sample_rate 'inf', which is not finite")


def test_declared_values_are_checked_against_the_header(tmp_path, wavs):
    header = "path,speaker,sample_rate,duration_s,channel"
    ok = read_manifest(_csv(tmp_path, [header, "a0.wav,x,16000,0.5,", "b.wav,x,16000.0,0.49,1"]), root=wavs)
    assert [(u.sample_rate, u.duration, u.channel) for u in ok] == [(16000, 0.5, None), (16000, 0.49, 1)]
    path = _csv(tmp_path, [header, "a0.wav,x,,100,"])
    _refused(path, f"Manifest {path} line 2 gives the duration 100 s", "lasts 0.500 s by its header", root=wavs)
    _refused(
        _csv(tmp_path, [header, "a0.wav,x,8000,,"]),
        "gives sample_rate 8000, but the header",
        "says 16000 Hz",
        root=wavs,
    )
    _refused(_csv(tmp_path, [header, "a0.wav,x,,,1"]), "line 2 gives channel 1, but", "has 1 channel(s)", root=wavs)


def test_a_declared_value_of_a_missing_file_is_left_to_the_scan(tmp_path):
    corpus = read_manifest(_csv(tmp_path, ["path,speaker,duration_s", "nowhere.wav,x,100"]))
    assert corpus.utterances[0].duration == 100.0


# -- duplicates ---------------------------------------------------------------------------------------------


def test_one_file_under_two_ids_or_two_speakers_is_refused(tmp_path):
    path = _csv(tmp_path, ["path,speaker,id", "a0.wav,x,u1", "a1.wav,x,u2", "a0.wav,y,u3"])
    _refused(path, f"Manifest {path} lines 2 and 4 list the same file", "(under the speakers x and y)")
    path = _csv(tmp_path, ["path,speaker,id", "a0.wav,x,u1", "./a0.wav,x,u2"])
    _refused(path, "lines 2 and 3 list the same file")


def test_two_channels_of_one_file_are_two_recordings(tmp_path, wavs):
    corpus = read_manifest(_csv(tmp_path, ["path,speaker,id,channel", "b.wav,x,l,0", "b.wav,y,r,1"]), root=wavs)
    assert [(u.id, u.channel) for u in corpus] == [("l", 0), ("r", 1)]
    _refused(_csv(tmp_path, ["path,speaker,id,channel", "b.wav,x,l,0", "b.wav,y,r,0"]), "(channel 0)", root=wavs)


# -- bytes, quoting, sizes -----------------------------------------------------------------------------------


def test_a_bom_is_dropped_in_csv_and_jsonl(tmp_path):
    csv_path = tmp_path / "m.csv"
    csv_path.write_bytes("\ufeffpath,speaker,id\r\na0.wav,x,u1\r\n".encode())
    jsonl = tmp_path / "m.jsonl"
    jsonl.write_bytes('\ufeff{"id": "u1", "path": "a0.wav", "speaker": "x"}\r\n'.encode())
    for path in (csv_path, jsonl):
        assert [(u.id, u.speaker) for u in read_manifest(path)] == [("u1", "x")]


def test_latin1_names_the_line_and_says_to_save_as_utf8(tmp_path):
    path = tmp_path / "m.csv"
    path.write_bytes("path,speaker,transcript\na0.wav,x,zero\na1.wav,x,café\n".encode("latin-1"))
    _refused(path, f"Manifest {path} line 3 is not UTF-8", "byte 0xe9", "save the file as UTF-8")


def test_an_unclosed_quote_on_line_19_is_refused_not_swallowing_20_and_21(tmp_path):
    rows = [f"a{k}.wav,spk{k % 3},u{k}" for k in range(17)] + [
        '"a17.wav,spk0,u17',
        "a18.wav,spk1,u18",
        "a19.wav,spk2,u19",
    ]
    path = _csv(tmp_path, ["path,speaker,id"] + rows)
    _refused(path, f"Manifest {path} line 19 opens a quoted field that does not close on that line")


def test_a_transcript_over_csvs_field_limit_is_read(tmp_path):
    long = "word " * 40_000  # 200 000 characters; csv's default limit is 131072
    path = _csv(tmp_path, ["path,speaker,transcript", f'a0.wav,x,"{long}"'])
    assert read_manifest(path).utterances[0].transcript == long.strip()


@pytest.mark.parametrize(
    "lines, fragment",
    [
        (
            ["path,speaker,gender", "a0.wav,x"],
            "line 2 has fewer fields than the header (2 where the header has 3: path, speaker, gender)",
        ),
        (["path,speaker"], "has no rows"),
        ([""], "m.csv is empty; it needs a header line"),
    ],
)
def test_short_lines_and_empty_files(tmp_path, lines, fragment):
    _refused(_csv(tmp_path, lines), fragment)


def test_dev_null_and_folders_are_named_for_what_they_are(tmp_path):
    _refused(tmp_path / "nope.csv", "does not exist")
    with pytest.raises(DataError, match="Manifest /dev/null is a device"):
        read_manifest("/dev/null")
    path = _csv(tmp_path, ["path,speaker", "/dev/null,x"])
    _refused(path, f"Manifest {path} line 2 names /dev/null, which is a device (such as /dev/null), not an audio file")


def test_an_ark_offset_is_named_as_one(tmp_path):
    path = _csv(tmp_path, ["path,speaker", "raw.ark:1234,x"])
    message = _refused(path, f"Manifest {path} line 2 names 'raw.ark:1234', a Kaldi archive offset")
    assert "does not exist" not in message


# -- through the command line: the manifest is read when the run starts -----------------------------------


EXPERIMENT = """\
name: strict-manifest
data:
  corpus: {{use: manifest, params: {{path: {path}}}}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""


def _run(tmp_path, manifest):
    exp = tmp_path / "exp.yaml"
    exp.write_text(EXPERIMENT.format(path=manifest))
    args = ["--experiment", str(exp), "--cache", str(tmp_path / "cache"), "-q", "--output", str(tmp_path / "run")]
    return CliRunner().invoke(main, args)


@pytest.mark.parametrize(
    "bad",
    [
        lambda rows: rows[:3] + [{**rows[3], "speaker": [rows[3]["speaker"]]}] + rows[4:],
        lambda rows: rows[:3] + [{**rows[3], "duration_s": "NaN"}] + rows[4:],
        lambda rows: rows[:3] + [{**rows[3], "channel": -0.5}] + rows[4:],
    ],
)
def test_a_bad_manifest_stops_the_run_with_one_sentence(tmp_path, fake_plugins, bad):
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "audio", speakers=6, utterances=3, seconds=0.3)
    rows = [{"path": u.path, "speaker": u.speaker, "gender": u.gender} for u in corpus]
    result = _run(tmp_path, _jsonl(tmp_path, bad(rows)))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.output.startswith("Error: ")
    assert "line 4" in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_latin1_manifest_stops_the_run_with_one_sentence(tmp_path, fake_plugins):
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "audio", speakers=6, utterances=3, seconds=0.3)
    lines = ["path,speaker,transcript"] + [f"{u.path},{u.speaker},caf\xe9" for u in corpus]
    path = tmp_path / "m.csv"
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))
    result = _run(tmp_path, path)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"Manifest {path} line 2 is not UTF-8" in result.output and "save the file as UTF-8" in result.output
