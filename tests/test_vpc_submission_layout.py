"""A VoicePrivacy submission's folders repaired as the toolkit repairs them (issue 36, item 2): a folder holding
only wav/<id>.wav gets its wav.scp built from those files and utt2spk, spk2gender, text and trials copied from
the original folder (check_kaldi_formart_data, VPC 2024 commit 400de3a), in a copy in vpeval's work folder;
every repair is a line of the run's log, and the scores equal those of the intact submission."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval.run.runner import Runner

EXPERIMENT = """\
variables:
  DATA: null
name: vpc-layout
seed: 0
data:
  corpus: {use: vpc, params: {root: "${DATA}", datasets: [libri_dev], train: null, utility: false}}
anonymizers:
  - use: precomputed
    label: submission
    params: {vpc: {root: "${DATA}", suffix: SUFFIX, datasets: [libri_dev], train: false, utility: false}}
attackers: [ge2e]
protocols: [O-A]
metrics: [eer]
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from vpeval.testing.vpc_tree import build_vpc_tree

    data = build_vpc_tree(tmp_path_factory.mktemp("vpc"), suffix="_fast", train_per_speaker=2)
    for name in ("libri_dev_enrolls", "libri_dev_trials_f", "libri_dev_trials_m"):
        bare = data / f"{name}_bare"  # the toolkit's layout for a submission: only data/<set><suffix>/wav/*.wav
        (bare / "wav").mkdir(parents=True)
        for line in (data / f"{name}_fast" / "wav.scp").read_text().splitlines():
            uid, path = line.split(maxsplit=1)
            shutil.copyfile(path, bare / "wav" / f"{uid}.wav")
    return data


def _run(data: Path, suffix: str, tmp_path: Path):
    exp = load_experiment_text(EXPERIMENT.replace("SUFFIX", suffix), "vpc.yaml", variables={"DATA": str(data)})
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()


def _scores(result) -> list[str]:
    scores_dir = result.folder / "scores"
    (entry,) = json.loads((scores_dir / "index.json").read_text())
    return (scores_dir / entry["file"]).read_text().splitlines()


def test_a_bare_submission_is_repaired_logged_and_scored_as_the_intact_one(data, tmp_path):
    bare = _run(data, "_bare", tmp_path / "bare")
    intact = _run(data, "_fast", tmp_path / "intact")
    assert _scores(bare) == _scores(intact) and len(_scores(bare)) > 20
    log = (bare.folder / "run.log").read_text()
    enrolls = data / "libri_dev_enrolls_bare"
    assert f"{enrolls}: wav.scp built from 12 files under {enrolls}/ (it had no wav.scp)" in log
    assert f"{enrolls}: spk2gender, text, utt2spk copied from {data / 'libri_dev_enrolls'} (missing)" in log
    assert "spk2gender, text, trials, utt2spk copied from" in log  # the trial folders' trials too
    assert not (enrolls / "wav.scp").exists()  # the user's folder is left as it was
    report = (bare.folder / "report.md").read_text()  # and each repair is in the report's drops and doubts
    assert f"- Logged: precomputed: {enrolls}: wav.scp built from 12 files under {enrolls}/" in report
    assert "Logged:" not in (intact.folder / "report.md").read_text()
    assert "wav.scp built" not in (intact.folder / "run.log").read_text()


def test_a_wav_scp_unlike_the_originals_is_rebuilt_and_an_unusable_folder_refused(data, tmp_path):
    folder = data / "libri_dev_trials_f_bare"
    ids = [line.split()[0] for line in (data / "libri_dev_trials_f" / "wav.scp").read_text().splitlines()]
    (folder / "wav.scp").write_text(f"{ids[0]} {folder / 'wav' / (ids[0] + '.wav')}\n")  # one line of several
    try:
        log = (_run(data, "_bare", tmp_path / "short").folder / "run.log").read_text()
        assert f"wav.scp built from {len(ids)} files under {folder}/ (its wav.scp lists 1 utterances" in log
    finally:
        (folder / "wav.scp").unlink()
    empty = data / "libri_dev_enrolls_none"
    empty.mkdir()
    with pytest.raises(ConfigError, match="none of the submission's folders libri_dev_enrolls_none, .* has a wav.scp"):
        load_experiment_text(EXPERIMENT.replace("SUFFIX", "_none"), "vpc.yaml", variables={"DATA": str(data)})
    for name in ("libri_dev_trials_f_none", "libri_dev_trials_m_none"):  # the others there: one line for the empty one
        shutil.copytree(data / name.replace("_none", "_bare"), data / name)
    with pytest.raises(ConfigError, match="libri_dev_enrolls_none has no wav.scp and no .wav files under it") as err:
        load_experiment_text(EXPERIMENT.replace("SUFFIX", "_none"), "vpc.yaml", variables={"DATA": str(data)})
    assert len(str(err.value).splitlines()) == 1
