"""The VoicePrivacy protocol by the challenge's own folder names: the `vpc` corpus (2024 gender trial
folders, 2026's gender-mixed ones), a submission read by `precomputed`'s `vpc` folders, results per
evaluation set (dataset) beside the pooled ones, and the toolkit-style results summary."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from vpeval.api import MetricInputs
from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.run.runner import Runner
from vpeval.testing.vpc_tree import build_vpc_tree
from vpeval.types import Scores

EXPERIMENT = """\
variables:
  VPC_DATA: null
name: vpc-protocol
seed: 3
data:
  corpus: {{use: vpc, params: {{root: "${{VPC_DATA}}", challenge: "{challenge}", train: null, utility: false}}}}
anonymizers:
  - use: precomputed
    label: fast
    params: {{vpc: {{root: "${{VPC_DATA}}", suffix: _fast, challenge: "{challenge}", train: false, utility: false}}}}
attackers: [ge2e]
protocols: [O-O, O-A]
metrics: [eer]
report: {{preset: vpc}}
"""


@pytest.fixture(scope="module")
def vpc_data(tmp_path_factory):
    return build_vpc_tree(tmp_path_factory.mktemp("vpc"), train_per_speaker=4)


@pytest.fixture(scope="module")
def run_2024(vpc_data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run2024")
    exp = load_experiment_text(EXPERIMENT.format(challenge="2024"), "vpc.yaml", variables={"VPC_DATA": str(vpc_data)})
    return Runner(exp, cache_root=tmp / "cache", output=tmp / "run", quiet=True).run()


def test_the_vpc_corpus_names_the_challenges_folders(vpc_data):
    cls = get_plugin_manager().get("corpus", "vpc")
    vpc24 = cls(cls.Params(root=str(vpc_data)), plugin_context()).kaldi_params()
    assert [(e.enrolls, e.trials) for e in vpc24.evaluation] == [
        ("libri_dev_enrolls", ["libri_dev_trials_f", "libri_dev_trials_m"]),
        ("libri_test_enrolls", ["libri_test_trials_f", "libri_test_trials_m"]),
    ]
    assert vpc24.attacker_train == "train-clean-360"
    vpc26 = cls(cls.Params(root=str(vpc_data), challenge="2026-track1"), plugin_context()).kaldi_params()
    assert [e.trials for e in vpc26.evaluation] == [["libri_dev_trials_mixed"], ["libri_test_trials_mixed"]]


def test_validate_names_each_missing_folder_in_one_sentence(vpc_data, tmp_path):
    text = EXPERIMENT.format(challenge="2024").replace("suffix: _fast", "suffix: _B3")
    with pytest.raises(ConfigError) as err:
        load_experiment_text(text, "vpc.yaml", variables={"VPC_DATA": str(vpc_data)})
    lines = str(err.value).splitlines()  # no folder of the submission at all: one sentence naming the six
    assert len(lines) == 1 and "line 10 (anonymizers[0].params)" in lines[0]
    assert (
        "none of the submission's folders libri_dev_enrolls_B3, " in lines[0] and "libri_test_trials_m_B3" in lines[0]
    )
    with pytest.raises(ConfigError, match=r"line 6 \(data.corpus.params\): the VoicePrivacy data folder .* not exist"):
        load_experiment_text(
            EXPERIMENT.format(challenge="2024"), "vpc.yaml", variables={"VPC_DATA": str(tmp_path / "absent")}
        )


def test_results_per_dataset_equal_the_metric_on_each_sets_trials(run_2024):
    rows = [r for r in run_2024.rows if r["metric"] == "eer" and r["gender"] == "all"]
    assert {r.get("dataset") for r in rows} == {None, "libri_dev", "libri_test"}
    scores_dir = run_2024.folder / "scores"
    index = json.loads((scores_dir / "index.json").read_text())
    eer = get_plugin_manager().get("metric", "eer")
    for entry in index:
        lines = (scores_dir / entry["file"]).read_text().split("\n")
        for dataset in ("libri_dev", "libri_test"):
            # the score file names each enrollment by its set's folder: select the set's trials from the text
            mine = [line.split() for line in lines if line.startswith(f"{dataset}_enrolls-")]
            scores = Scores(np.array([float(p[2]) for p in mine]), np.array([p[3] == "target" for p in mine]))
            (expected,) = [r for r in eer().compute(MetricInputs(scores=scores)) if r.gender == "all"]
            (row,) = [r for r in rows if r.get("dataset") == dataset and r["protocol"] == entry["protocol"]]
            assert row["value"] == pytest.approx(expected.value, abs=1e-9)


def test_the_report_has_a_dataset_column_and_the_toolkit_summary(run_2024):
    report = (run_2024.folder / "report.md").read_text()
    assert "| dataset |" in report and "## VoicePrivacy results summary" in report
    summary = (run_2024.folder / "results_vpc.txt").read_text()
    assert "---- ASV results: ge2e (trained on original) ----" in summary
    for dataset, split in (("libri", "dev"), ("libri", "test")):
        for gender in ("f", "m"):
            assert re.search(rf"{dataset}\s+{split}\s+{gender}\s+original\s+original\s+\d+\.\d{{3}}", summary)
            assert re.search(rf"{dataset}\s+{split}\s+{gender}\s+original\s+anon\s+fast\s+\d+\.\d{{3}}", summary)


def test_2026_reads_the_gender_mixed_trials(vpc_data, tmp_path):
    text = EXPERIMENT.format(challenge="2026-track1").replace("protocols: [O-O, O-A]", "protocols: [O-O]")
    exp = load_experiment_text(text, "vpc.yaml", variables={"VPC_DATA": str(vpc_data)})
    result = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    trials = json.loads((result.folder / "results.json").read_text())["trials"]["1"]
    assert trials == 2 * 6 * 18  # two sets, each enrolled speaker against each of the 18 trial utterances


def test_utility_sets_are_evaluation_speech_in_no_trial(vpc_data):
    from vpeval.settings import PlanSettings

    cls = get_plugin_manager().get("corpus", "kaldi")
    params = cls.Params(
        root=str(vpc_data),
        sets=[],
        evaluation=[{"enrolls": "libri_dev_enrolls", "trials": ["libri_dev_trials_f", "libri_dev_trials_m"]}],
        utility=["libri_test_enrolls"],  # plays IEMOCAP_dev: speech for WER and UAR only
    )
    source = cls(params, plugin_context())
    corpus = source.load()
    plan = source.evaluation_plan(corpus, PlanSettings())
    utility_ids = set(corpus.info["kaldi_sets"]["libri_test_enrolls"])
    in_trials = {i for t in plan.trial_lists[1].trials for i in (*t.enroll, *t.test)}
    assert utility_ids <= {u.id for u in plan.evaluation.utterances}
    assert not utility_ids & in_trials and not utility_ids & set(plan.enroll_ids + plan.test_ids)
