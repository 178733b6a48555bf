"""experiments/privacy-beyond-eer.yaml (issue 42) and the training side that attribute inference reads.

Default run: the experiment validates and its attribute sources are the run's own corpus; a small run through
the Runner gives attribute-inference rows fitted on the attacker's training speakers, equal to scikit-learn
fitted on the same attacker's vectors of the same training utterances (recomputed here from the plan).
The whole experiment, scaled to the tiny corpus, runs in tests/test_shipped_experiments_run.py (slow)."""

from __future__ import annotations

import json
import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import balanced_accuracy_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from vpeval import hookimpl
from vpeval.api import Attacker
from vpeval.config import load_experiment, load_experiment_text
from vpeval.data.plan import make_plan
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.run.runner import Runner
from vpeval.types import Utterance

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT = ROOT / "experiments" / "privacy-beyond-eer.yaml"


def test_the_experiment_loads_and_reads_the_groups_of_its_own_corpus():
    exp = load_experiment(EXPERIMENT)
    raw = yaml.safe_load(EXPERIMENT.read_text())
    corpus = raw["data"]["corpus"]
    assert corpus["use"] == "synth" and corpus["params"]["speaker_groups"] is True
    uses = [m if isinstance(m, str) else m["use"] for m in raw["metrics"]]
    assert {"eer", "identification", "by-attribute", "by-attribute-similarity", "attribute-inference"} <= set(uses)
    assert "privacy-gate" in uses and any(a["use"] == "fusion" for a in raw["attackers"])
    for m in raw["metrics"]:
        if isinstance(m, dict) and m["use"] in ("by-attribute", "by-attribute-similarity", "attribute-inference"):
            assert m["params"]["corpus"] == corpus  # the same speakers as the run
            assert m["params"]["bands"] == {"age": [30, 50]}  # the corpus's declared edges
            assert set(m["params"]["attributes"]) == {"gender", "age", "accent"}
    assert {a.label for a in exp.attackers} == {"ge2e", "ecapa-small", "ge2e+ecapa-small"}


class Loudness(Attacker):
    """A pretrained stand-in: mean absolute sample, zero-crossing rate and RMS of each utterance."""

    name = "test-loudness"
    needs_training = False

    @staticmethod
    def features(u: Utterance) -> np.ndarray:
        audio = u.load(16000).astype(np.float64)
        return np.array([np.abs(audio).mean(), np.mean(np.diff(np.sign(audio)) != 0), np.sqrt(np.mean(audio**2))])

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return np.mean([self.features(u) for u in utterances], axis=0)


@pytest.fixture(scope="module")
def loudness():
    module = types.ModuleType("privacy_beyond_eer_test_attackers")
    module.register_attackers = hookimpl(lambda register: register(Loudness))
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-pbe-tests", "1.0", name="vpeval-pbe-tests")
    yield
    manager.unregister_module(module)


EXP = """
name: training-side
seed: 3
data:
  corpus: {use: synth, params: &corpus {preset: tiny, speakers: 16, utterances: 3, speaker_groups: true}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
attackers:
  - {use: embedding-view, label: loud, params: {use: test-loudness}}
protocols: [O-O]
metrics:
  - use: attribute-inference
    params: {attributes: [gender], corpus: {use: synth, params: *corpus}, min_speakers: 2, train_utterances: 2,
             bootstrap: 0}
output: run
"""


def test_attribute_inference_fits_on_the_attackers_training_speakers(tmp_path, loudness):
    exp = load_experiment_text(EXP, str(tmp_path / "exp.yaml"), manager=get_plugin_manager())
    Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    rows = json.loads((tmp_path / "run" / "results.json").read_text())["rows"]
    rows = {r["metric"]: r for r in rows if r["metric_plugin"].startswith("attribute-inference")}
    assert set(rows) == {"attribute-bacc", "attribute-bacc-original"}
    assert rows["attribute-bacc"]["protocol"] == "O" and rows["attribute-bacc"]["value"] is not None

    # independently: the plan's training speakers, two utterances of each chosen as the metric's seed chooses,
    # the stand-in's features of them, and scikit-learn's regression
    source = plugin_context(seed=3, work_dir=tmp_path / "cache" / "work" / "corpus-synth").get(
        "corpus", "synth", {"preset": "tiny", "speakers": 16, "utterances": 3, "speaker_groups": True}
    )
    corpus = source.load()
    plan = make_plan(corpus, exp.plan_settings)
    gender = source.speaker_attributes()["gender"]
    rng = plugin_context(seed=3, work_dir=tmp_path / "m").rng("train-utterances", "attribute-inference", "gender")
    chosen = []
    for speaker in sorted(plan.train.speakers):
        utts = [u for u in plan.train.utterances if u.speaker == speaker]
        chosen += [utts[k] for k in sorted(rng.choice(len(utts), size=2, replace=False))]
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000))
    model.fit(np.stack([Loudness.features(u) for u in chosen]), [gender[u.speaker] for u in chosen])
    evaluation = plan.evaluation.utterances
    truth = [gender[u.speaker] for u in evaluation]
    expected = 100 * balanced_accuracy_score(truth, model.predict(np.stack([Loudness.features(u) for u in evaluation])))
    details = rows["attribute-bacc"]["details"]
    assert details["train_utterances"] == len(chosen) == 2 * len(plan.train.speakers)
    assert sum(details["train_speakers_per_class"].values()) == len(plan.train.speakers)
    assert rows["attribute-bacc-original"]["value"] == pytest.approx(expected)
    assert rows["attribute-bacc"]["value"] == pytest.approx(expected)  # protocol O: observed is the original
