"""The runner's metric inputs: one builder per `needs` (stage_metrics.METRIC_INPUTS), rows in one fixed order."""

from __future__ import annotations

import itertools
import types

import numpy as np
import pytest

from vpeval import hookimpl
from vpeval.api import Metric
from vpeval.config import load_experiment_text
from vpeval.errors import PluginError
from vpeval.run.runner import METRIC_INPUTS, Runner
from vpeval.types import MetricResult


class Level(Metric):
    """Mean absolute sample of the original and of the anonymized evaluation speech (a stand-in for WER)."""

    name = "level"
    needs = "speech"

    def compute(self, inputs):
        def level(corpus):
            return float(np.mean([np.abs(u.load(16000)).mean() for u in corpus]))

        out = [MetricResult("level", level(inputs.original), details={"speech": "original"})]
        if inputs.anonymized is not None:
            out.append(MetricResult("level", level(inputs.anonymized), details={"speech": "anonymized"}))
        return out


class Mystery(Metric):
    """Reads an input no builder provides."""

    name = "mystery"
    needs = "tea-leaves"


@pytest.fixture
def plugins(fake_plugins):
    from vpeval.plugins import get_plugin_manager

    module = types.ModuleType("metric_input_plugins")

    def register_metrics(register):
        register(Level)
        register(Mystery)

    module.register_metrics = hookimpl(register_metrics)
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-metric-inputs", "1.0", name="vpeval-metric-inputs")
    yield
    manager.unregister_module(module)


EXPERIMENT = """\
name: inputs
seed: 4
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers:
  - {use: fake-inverter, label: inverter}
  - {use: fake-spectrum, label: semi, train_on: semi-informed}
protocols: PROTOCOLS
metrics: METRICS
"""


def run(tmp_path, protocols="[O-O, O-A]", metrics="[level, fake-cosine, fake-separation, fake-eer]"):
    text = EXPERIMENT.replace("PROTOCOLS", protocols).replace("METRICS", metrics)
    return Runner(
        load_experiment_text(text, "exp.yaml"), cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True
    ).run()


def test_every_kind_of_metric_input_has_one_builder():
    assert list(METRIC_INPUTS) == ["scores", "similarity", "embeddings", "speech"]


def test_rows_come_scores_first_then_each_attacker_as_it_trained_then_speech(tmp_path, plugins):
    """The order results.json and results.csv had before the builders moved into one table."""
    rows = run(tmp_path).rows
    blocks = [key for key, _ in itertools.groupby((r["metric_plugin"], r["attacker"]) for r in rows)]
    assert blocks == [
        ("fake-eer", "inverter"),
        ("fake-eer", "semi"),  # every score set, after the attacks
        ("fake-separation", "inverter"),
        ("fake-cosine", "inverter"),  # while inverter is in memory
        ("fake-separation", "semi"),  # semi recovers no embeddings: no fake-cosine rows
        ("level", ""),
    ]
    assert [(r["anonymizer"], r["details"]["speech"]) for r in rows if r["metric_plugin"] == "level"] == [
        ("original", "original"),
        ("fake-shift", "anonymized"),
    ]  # the original speech's row once
    assert {(r["anonymizer"], r["protocol"]) for r in rows if r["metric_plugin"] == "fake-cosine"} == {
        ("none", "O"),
        ("fake-shift", "A"),
    }


def test_a_similarity_metric_gets_the_anonymized_speech_when_no_protocol_scores_it(tmp_path, plugins):
    rows = run(tmp_path, protocols="[O-O]", metrics="[fake-separation]").rows
    assert {(r["attacker"], r["anonymizer"]) for r in rows} == {("inverter", "fake-shift"), ("semi", "fake-shift")}
    assert all(np.isfinite(r["value"]) for r in rows)


def test_a_metric_that_reads_an_unknown_input_is_refused_before_any_stage(tmp_path, plugins):
    with pytest.raises(PluginError) as error:
        run(tmp_path, metrics="[fake-eer, mystery]")
    assert str(error.value) == (
        "metric mystery reads 'tea-leaves', which vpeval does not provide (a metric reads one "
        "of: scores, similarity, embeddings, speech); this is a bug in vpeval-metric-inputs "
        "1.0: report it to its authors."
    )
    assert not (tmp_path / "cache" / "anonymize").exists() and not (tmp_path / "cache" / "train").exists()
