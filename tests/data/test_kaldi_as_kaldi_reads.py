"""Kaldi folders read as Kaldi reads them (issue 38, part 2): each case passed wrongly before.

A wav.scp path kept its trailing tab and a pipe ending in spaces was not taken for a pipe; a wav.scp line
with its columns swapped was reported against utt2spk; a trial file that is an enrollment file under
another name (a hard link) or a byte-identical copy was scored against itself; a trials folder whose
_f/_m suffix contradicts spk2gender changed the trials' gender in silence; ids that collided after the
folder prefix were "a bug in vpeval".
"""

import os
import shutil

import pytest

from vpeval.data.kaldi import read_data_dir, write_data_dir
from vpeval.data.plan import PlanSettings
from vpeval.errors import DataError
from vpeval.testing.dummies import make_corpus

from .test_sources import kaldi_source, vpc  # noqa: F401  (vpc is a fixture)


@pytest.fixture
def folder(tmp_path):
    corpus = make_corpus(tmp_path / "wav", speakers=2, utterances=3, seconds=0.15)
    return write_data_dir(corpus, tmp_path / "data" / "set")


def _first_line(folder, change):
    lines = (folder / "wav.scp").read_text().splitlines()
    (folder / "wav.scp").write_text("\n".join([change(*lines[0].split())] + lines[1:]) + "\n")
    return lines[0].split()


@pytest.mark.parametrize("tail", ["\t", "  ", " \t "])
def test_trailing_whitespace_after_a_path_is_not_part_of_it(folder, tail):
    utt, path = _first_line(folder, lambda utt, path: f"{utt} {path}{tail}")
    assert read_data_dir(folder)[utt].path == path


def test_a_pipe_line_ending_in_spaces_is_a_pipe(folder, tmp_path):
    utt, path = _first_line(folder, lambda utt, path: f"{utt} cat {path} |   ")
    with pytest.raises(DataError, match="is a shell pipe"):
        read_data_dir(folder)
    piped = read_data_dir(folder, allow_pipes=True, pipe_cache=tmp_path / "pipes")
    assert open(piped[utt].path, "rb").read() == open(path, "rb").read()


def test_a_wav_scp_line_with_swapped_columns_is_reported_against_wav_scp(folder):
    _first_line(folder, lambda utt, path: f"{path} {utt}")
    with pytest.raises(DataError, match=r"wav\.scp line 1 reads .*whose first field is a path, not an utterance id"):
        read_data_dir(folder)


def test_an_id_without_a_speaker_names_its_wav_scp_line(folder):
    _first_line(folder, lambda utt, path: f"renamed-utt {path}")
    with pytest.raises(DataError, match=r"utt2spk does not give a speaker for renamed-utt .*wav\.scp line 1 lists"):
        read_data_dir(folder)


def _enrolled_and_trial_file(root):
    enroll_path = (root / "libri_dev_enrolls" / "wav.scp").read_text().split()[1]
    trial_path = (root / "libri_dev_trials_f" / "wav.scp").read_text().split()[1]
    return enroll_path, trial_path


@pytest.mark.parametrize("how", ["hard link", "copy"])
def test_a_trial_that_is_the_same_audio_as_an_enrollment_is_refused(vpc, tmp_path, how):  # noqa: F811
    root, _, _ = vpc
    enroll_path, trial_path = _enrolled_and_trial_file(root)
    os.unlink(trial_path)
    os.link(enroll_path, trial_path) if how == "hard link" else shutil.copyfile(enroll_path, trial_path)
    source = kaldi_source(root, tmp_path / "work")
    with pytest.raises(
        DataError, match=rf"lists {trial_path} \(the same audio as {enroll_path}\), which .* for enroll"
    ):
        source.evaluation_plan(source.load(), PlanSettings())


def test_a_trials_folder_whose_suffix_contradicts_spk2gender_gets_a_note(vpc, tmp_path):  # noqa: F811
    root, corpus, _ = vpc
    source = kaldi_source(root, tmp_path / "work")
    assert not source.evaluation_plan(source.load(), PlanSettings()).notes
    flipped = (root / "libri_dev_enrolls" / "spk2gender").read_text().split()[:2]
    for gender_file in root.glob("*/spk2gender"):  # every folder that lists the speaker says the other gender
        lines = gender_file.read_text().replace(" ".join(flipped), f"{flipped[0]} {'m' if flipped[1] == 'f' else 'f'}")
        gender_file.write_text(lines)
    plan = source.evaluation_plan(source.load(), PlanSettings())
    suffix = flipped[1]  # the speaker's trials sit in the folder of its true gender
    assert any(
        f"libri_dev_trials_{suffix} enrolls 1 speaker(s) ({flipped[0]} first)" in note and "spk2gender" in note
        for note in plan.notes
    ), plan.notes


def test_ids_that_collide_after_the_folder_prefix_name_the_folders(vpc, tmp_path):  # noqa: F811
    root, _, _ = vpc
    train, trials = root / "train", root / "libri_dev_trials_f"
    utt, path = (trials / "wav.scp").read_text().split()[:2]
    spk = (trials / "utt2spk").read_text().split()[1]
    # train lists the trial id (so both get a prefix) and, under another id, the prefixed name itself.
    clash = f"libri_dev_trials_f-{utt}"
    copies = [shutil.copyfile(path, tmp_path / f"copy{k}.wav") for k in range(2)]
    extra = {"wav.scp": [f"{utt} {copies[0]}", f"{clash} {copies[1]}"], "utt2spk": [f"{utt} {spk}", f"{clash} {spk}"]}
    for name, rows in extra.items():
        (train / name).write_text((train / name).read_text() + "\n".join(rows) + "\n")
    for name in ("spk2utt", "spk2gender"):
        (train / name).unlink()
    with pytest.raises(
        DataError, match=rf"The id {clash} stands for two utterances .*train/wav\.scp.*libri_dev_trials_f"
    ):
        kaldi_source(root, tmp_path / "work", evaluation=None, attacker_train=None).load()
