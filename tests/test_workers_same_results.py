"""An evaluation gives the same results whatever the number of cores it uses (issue 39, item 3).

`workers` defaults to every core the process may use, so a run on a laptop and on a 64-core server must
agree: the speechbrain attacker's packed ECAPA buckets run side by side on threads at one torch thread each
(vpeval_torch.threads), the ASR and SER evaluators' utterances on the run's workers. A VoicePrivacy-layout
tree with random-weight models (the small real recordings): the same results.json values and intervals
at workers 1 and 2, and the UAR metric's rows with 1 and 2 workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vpeval.cli import main

EXPERIMENT = """\
name: same-at-any-core-count
seed: 0
device: cpu
workers: {workers}
data:
  corpus: {{use: vpc, params: {{root: "{data}", challenge: "2024", utility: false}}}}
anonymizers:
  - use: precomputed
    label: submission
    params: {{vpc: {{root: "{data}", suffix: "_fast", challenge: "2024", utility: false}}}}
attackers:
  - use: speechbrain
    label: asv_eval
    params: {{source: "{asv}"}}
protocols: [O-O, O-A, A-A]
metrics:
  - eer
  - use: wer
    params:
      asr: speechbrain-asr
      asr_params: {{source: "{asr}"}}
      sets: ["{data}/libri_dev_trials_f", "{data}/libri_dev_trials_m"]
      normaliser: vpc2024
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("speechbrain")
    pytest.importorskip("transformers")
    from test_vpc_toolkit_evaluation import build_tree

    from vpeval_speechbrain.tiny import write_ecapa_folder

    root = tmp_path_factory.mktemp("vpc-cores")
    found = build_tree(root)
    found["asv"] = write_ecapa_folder(root / "exp" / "asv_orig" / "CKPT+1", seed=1, channels=(64, 64, 64, 64, 192))
    return found


def _values(path: Path) -> list[tuple]:
    rows = json.loads(path.read_text())["rows"]
    keys = ("metric", "anonymizer", "attacker", "protocol", "gender", "dataset", "value", "ci_low", "ci_high")
    return sorted(tuple(str(row.get(k)) for k in keys) for row in rows)


@pytest.mark.slow
def test_a_run_gives_the_same_results_with_one_and_two_workers(tree, tmp_path):
    results = {}
    for workers in (1, 2):
        experiment = tmp_path / f"workers{workers}.yaml"
        text = EXPERIMENT.format(workers=workers, data=tree["data"], asv=tree["asv"], asr=tree["asr"])
        experiment.write_text(text)
        out = tmp_path / f"run{workers}"
        args = ["--experiment", str(experiment), "--no-cache", "--quiet", "--output", str(out)]
        done = CliRunner().invoke(main, args, catch_exceptions=False)
        assert done.exit_code == 0, done.output
        results[workers] = _values(out / "results.json")
    assert {r[0] for r in results[1]} >= {"eer", "wer"}
    assert len(results[1]) > 20 and len({r[6] for r in results[1]}) > 5  # many rows, not all one value
    assert results[1] == results[2]


def test_uar_rows_are_the_same_with_one_and_two_workers(tree, tmp_path):
    from vpeval.api import MetricInputs
    from vpeval.data.kaldi import read_data_dir
    from vpeval.plugins import plugin_context
    from vpeval_speech.uar import UAR

    data = tree["data"]
    original, anonymized = read_data_dir(data / "IEMOCAP_dev"), read_data_dir(data / "IEMOCAP_dev_fast")
    params = UAR.Params(
        evaluator="speechbrain",
        models=str(tree["ser"]),
        spk2fold=[str(data / "IEMOCAP_dev" / "spk2fold")],
        bootstrap=50,
    )
    rows = {}
    for workers in (1, 2):
        context = plugin_context(seed=0, work_dir=tmp_path / f"uar{workers}", workers=workers)
        found = UAR(params, context).compute(MetricInputs(original=original, anonymized=anonymized))
        rows[workers] = [(r.metric, r.gender, r.value, r.ci_low, r.ci_high, r.details.get("speech")) for r in found]
    assert len(rows[1]) >= 2 and rows[1] == rows[2]
