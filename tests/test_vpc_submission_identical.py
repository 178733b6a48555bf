"""A submission whose files are the original audio byte for byte: the precomputed plugin's warning reaches
report.md's "Drops and doubts" (issue 38, part 8, with the log warnings of 3b964e3), not only run.log."""

from __future__ import annotations

import shutil

from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner

EXPERIMENT = """\
variables:
  DATA: null
name: vpc-identical
seed: 0
data:
  corpus: {use: vpc, params: {root: "${DATA}", datasets: [libri_dev], train: null, utility: false}}
anonymizers:
  - use: precomputed
    label: submission
    params: {vpc: {root: "${DATA}", suffix: _same, datasets: [libri_dev], train: false, utility: false}}
attackers: [ge2e]
protocols: [O-A]
metrics: [eer]
"""


def test_a_submission_of_the_original_files_is_named_in_the_report(tmp_path):
    from vpeval.testing.vpc_tree import build_vpc_tree

    data = build_vpc_tree(tmp_path / "vpc", suffix="_fast", train_per_speaker=2)
    for name in ("libri_dev_trials_f", "libri_dev_trials_m"):
        shutil.copytree(data / f"{name}_fast", data / f"{name}_same")
    enrolls = data / "libri_dev_enrolls_same"  # the originals copied, byte for byte: not anonymized
    enrolls.mkdir()
    lines = []
    for line in (data / "libri_dev_enrolls" / "wav.scp").read_text().splitlines():
        uid, path = line.split(maxsplit=1)
        shutil.copyfile(path, enrolls / f"{uid}.wav")
        lines.append(f"{uid} {enrolls / f'{uid}.wav'}")
    (enrolls / "wav.scp").write_text("\n".join(lines) + "\n")
    for name in ("utt2spk", "spk2gender"):
        shutil.copyfile(data / "libri_dev_enrolls" / name, enrolls / name)
    exp = load_experiment_text(EXPERIMENT, "vpc.yaml", variables={"DATA": str(data)})
    result = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    report = (result.folder / "report.md").read_text()
    doubts = report[report.index("Drops and doubts") :]
    assert f"- Logged: precomputed: {len(lines)} of the " in doubts, doubts[:1500]
    assert "submitted files are byte-identical to their original audio" in doubts
    assert f"{enrolls}/" in doubts and "Logged:" not in report[: report.index("Drops and doubts")]
