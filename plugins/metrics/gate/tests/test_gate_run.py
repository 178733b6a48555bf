"""The gate in a whole run: a tiny ECAPA trained for one epoch fails it and is marked in the report; the
same ECAPA trained to convergence passes and is not (issue 42: fires on a 1-epoch attacker, not on a
converged one). Needs the ecapa attacker (vpeval-asv), mcadams and the synth corpus; skipped without them."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.plugins import get_plugin_manager

TINY = (
    "{channels: [32, 32, 32, 32, 96], embedding_dim: 32, batch_size: 16, crop_seconds: 1.0, lr: 0.005, "
    "lr_schedule: constant, validation_share: 0.25, patience: null, epochs: EPOCHS}"
)
EXPERIMENT = f"""\
name: gate
seed: 1
data:
  corpus: {{use: synth, params: {{speakers: 24, utterances: 8, min_seconds: 1.5, max_seconds: 3.0}}}}
  attacker_train_speakers: 16
  target_trials_per_speaker: 6
  nontarget_trials_per_speaker: 6
anonymizers: [mcadams]
attackers:
  - {{use: ecapa, label: one-epoch, params: {TINY.replace("EPOCHS", "1")}}}
  - {{use: ecapa, label: converged, params: {TINY.replace("EPOCHS", "8")}}}
protocols: [O-O, O-A]
metrics:
  - {{use: eer, params: {{bootstrap: 0}}}}
  - {{use: privacy-gate, params: {{max_original_eer: 25}}}}
"""


@pytest.mark.slow
def test_the_gate_fires_on_a_one_epoch_attacker_and_not_on_a_converged_one(tmp_path):
    names = get_plugin_manager().names("attacker"), get_plugin_manager().names("anonymizer")
    if "ecapa" not in names[0] or "mcadams" not in names[1] or "synth" not in get_plugin_manager().names("corpus"):
        pytest.skip("needs the ecapa attacker and the mcadams anonymizer")
    from vpeval.run.runner import Runner

    exp = load_experiment_text(EXPERIMENT, "gate.yaml")
    result = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    gate = {r["attacker"]: r for r in result.rows if r["metric"] == "privacy-gate"}
    print(
        {a: r["value"] for a, r in gate.items()},
        [(r["attacker"], r["protocol"], r["gender"], r["value"]) for r in result.rows if r["metric"] == "eer"],
        result.training,
    )
    assert gate["one-epoch"]["details"]["gate"]["fires"], gate["one-epoch"]["value"]
    assert not gate["converged"]["details"]["gate"]["fires"], gate["converged"]["value"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| one-epoch † |" in report and "one-epoch failed the privacy gate" in report
    assert "converged †" not in report
