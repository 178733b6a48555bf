"""Metrics that read recovered embeddings (seed 002's inversion) get them from attackers that recover them."""

from __future__ import annotations

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval.run.runner import Runner

EXPERIMENT = """\
name: inversion
seed: 2
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-inverter, fake-spectrum]
protocols: [O-O]
metrics: [fake-eer, fake-cosine]
"""


def test_an_embeddings_metric_gets_numbers_for_original_and_anonymized_speech(fake_plugins, tmp_path):
    result = Runner(
        load_experiment_text(EXPERIMENT, "exp.yaml"), cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True
    ).run()
    rows = {(r["attacker"], r["anonymizer"], r["protocol"]): r for r in result.rows if r["metric"] == "fake-cosine"}
    assert set(rows) == {("fake-inverter", "none", "O"), ("fake-inverter", "fake-shift", "A")}  # not fake-spectrum
    assert rows[("fake-inverter", "none", "O")]["value"] == pytest.approx(1.0)  # recovered from the same audio
    assert rows[("fake-inverter", "fake-shift", "A")]["value"] < 0.99  # recovered from anonymized audio
    assert rows[("fake-inverter", "none", "O")]["details"]["rows"] == len(result.anonymized["fake-shift"])
    again = Runner(
        load_experiment_text(EXPERIMENT, "exp.yaml"), cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True
    ).run()
    assert "metrics" not in again.executed  # cached like every metric


def test_validate_refuses_an_embeddings_metric_without_an_attacker_that_recovers_them(fake_plugins):
    text = EXPERIMENT.replace("attackers: [fake-inverter, fake-spectrum]", "attackers: [fake-spectrum]")
    with pytest.raises(ConfigError, match=r"exp\.yaml, line 10 \(metrics\[1\]\).*no attacker of this experiment does"):
        load_experiment_text(text, "exp.yaml")
