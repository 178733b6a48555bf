import shlex

import numpy as np
import pytest

from vpeval.audio import read_audio
from vpeval.data.kaldi import read_data_dir, read_trials, write_data_dir
from vpeval.errors import DataError


def _fields(u):
    return (u.id, u.speaker, u.path, u.gender, u.transcript, u.emotion)


def test_round_trip_keeps_every_label(corpus, tmp_path):
    folder = write_data_dir(corpus, tmp_path / "data" / "dummy")
    back = read_data_dir(folder)
    assert [_fields(u) for u in back] == [_fields(u) for u in sorted(corpus, key=lambda u: u.id)]
    assert back.speaker_gender == corpus.speaker_gender
    assert [u.duration for u in back] == pytest.approx(
        [u.duration for u in sorted(corpus, key=lambda u: u.id)], abs=1e-3
    )
    # Written sorted in C order, as Kaldi's validate_data_dir wants.
    for name in ("wav.scp", "utt2spk", "spk2utt", "spk2gender", "text", "utt2emo"):
        keys = [line.split()[0] for line in (folder / name).read_text().splitlines()]
        assert keys == sorted(keys), name
    spk2utt = dict(line.split(maxsplit=1) for line in (folder / "spk2utt").read_text().splitlines())
    assert spk2utt["spk001"].split() == [u.id for u in corpus if u.speaker == "spk001"]


def test_round_trip_with_copied_audio_and_spk2utt_only(corpus, tmp_path):
    folder = write_data_dir(corpus, tmp_path / "data" / "copy", audio_folder=tmp_path / "audio")
    (folder / "utt2spk").unlink()
    back = read_data_dir(folder)
    assert [u.speaker for u in back] == [u.speaker for u in sorted(corpus, key=lambda u: u.id)]
    first = back.utterances[0]
    assert first.path == str((tmp_path / "audio" / f"{first.id}.wav").resolve())
    assert np.array_equal(read_audio(first.path)[0], read_audio(corpus[first.id].path)[0])


def test_optional_files_are_left_out_when_the_corpus_has_no_such_labels(corpus, tmp_path):
    bare = corpus.subset([u.id for u in corpus])
    bare.utterances = [u.replace(emotion=None, transcript=None) for u in bare.utterances]
    folder = write_data_dir(bare, tmp_path / "bare")
    assert not (folder / "utt2emo").exists() and not (folder / "text").exists()


def test_relative_paths_resolve_against_the_recipe_folder(corpus, tmp_path):
    recipe = tmp_path / "recipe"
    folder = write_data_dir(corpus, recipe / "data" / "set")
    lines = (folder / "wav.scp").read_text().splitlines()
    (recipe / "wav").symlink_to(corpus.utterances[0].path.rsplit("/", 1)[0])
    (folder / "wav.scp").write_text(
        "".join(f"{line.split()[0]} wav/{line.split()[1].rsplit('/', 1)[1]}\n" for line in lines)
    )
    back = read_data_dir(folder)
    assert all(read_audio(u.path)[0].size for u in back.utterances[:2])


def test_pipe_is_refused_with_its_line_and_what_to_set(small_corpus, tmp_path):
    folder = write_data_dir(small_corpus, tmp_path / "data" / "set")
    lines = (folder / "wav.scp").read_text().splitlines()
    utt, path = lines[2].split(maxsplit=1)
    lines[2] = f"{utt} cat {shlex.quote(path)} |"
    (folder / "wav.scp").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as err:
        read_data_dir(folder)
    message = str(err.value)
    assert f"{folder / 'wav.scp'} line 3 is a shell pipe" in message and "--allow-pipes" in message

    cache = tmp_path / "pipes"
    corpus_back = read_data_dir(folder, allow_pipes=True, pipe_cache=cache)
    decoded = corpus_back[utt].path
    assert decoded.startswith(str(cache))
    assert np.array_equal(read_audio(decoded)[0], read_audio(path)[0])
    # The pipe runs once: a second read finds the cached wav even if the source is gone.
    (tmp_path / "wav" / f"{utt}.wav").unlink()
    assert read_data_dir(folder, allow_pipes=True, pipe_cache=cache)[utt].path == decoded


def test_failing_pipe_names_the_line(corpus, tmp_path):
    folder = write_data_dir(corpus, tmp_path / "set")
    (folder / "wav.scp").write_text("spk000-u000 false |\n")
    with pytest.raises(DataError, match=r"wav\.scp line 1: the pipe 'false' failed"):
        read_data_dir(folder, allow_pipes=True, pipe_cache=tmp_path / "cache")
    (folder / "wav.scp").write_text("spk000-u000 echo hello |\n")
    with pytest.raises(DataError, match=r"line 1: the pipe 'echo hello' did not write a readable wav"):
        read_data_dir(folder, allow_pipes=True, pipe_cache=tmp_path / "cache")


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda f: (f / "wav.scp").unlink(), "has no wav.scp"),
        (lambda f: ((f / "utt2spk").unlink(), (f / "spk2utt").unlink()), "neither utt2spk nor spk2utt"),
        (lambda f: (f / "segments").write_text("a b 0 1\n"), "segments file"),
        (lambda f: (f / "wav.scp").write_text("lonely-id\n"), r"wav\.scp line 1 reads 'lonely-id'"),
        (lambda f: (f / "spk2gender").write_text("spk000 x\n"), "gender 'x'"),
        (lambda f: (f / "wav.scp").write_text("new-utt /x.wav\n"), "does not give a speaker for new-utt"),
        (lambda f: (f / "wav.scp").write_text(f"spk000-u000 {f}\n"), r"wav\.scp line 1 names .*, which is a folder"),
        (
            lambda f: (f / "utt2spk").write_text("spk000-u000 spk000 extra\n"),
            r"utt2spk line 1 reads 'spk000-u000 spk000 extra'",
        ),
    ],
)
def test_malformed_folders_say_what_is_wrong(corpus, tmp_path, change, expected):
    folder = write_data_dir(corpus, tmp_path / "set")
    change(folder)
    with pytest.raises(DataError, match=expected):
        read_data_dir(folder)


def test_read_trials_and_bad_lines(tmp_path):
    path = tmp_path / "trials"
    path.write_text("1272 1272-128104-0000 target\n\n1272 2078-142845-0001 nontarget\n")
    assert read_trials(path) == [("1272", "1272-128104-0000", True), ("1272", "2078-142845-0001", False)]
    path.write_text("a b target\na b maybe\n")
    with pytest.raises(DataError, match=r"trials line 2 reads 'a b maybe'"):
        read_trials(path)
