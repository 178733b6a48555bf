"""Through the core: a Stage I+II dast model is trained once, cached, and starts a Stage III attacker
(init_from) that adapts to the target anonymizer; the run reports EERs for both."""

from __future__ import annotations

import pytest

from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner

EXPERIMENT = """\
name: dast-curriculum
seed: 3
data:
  corpus: {use: synth, params: {preset: tiny, speakers: 12, utterances: 6}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 4
  nontarget_trials_per_speaker: 4
anonymizers:
  - {use: mcadams, params: {alpha_range: [0.6, 0.8]}}
attackers:
  - use: dast
    label: dast-I+II
    params: &tiny
      fusion: fbank
      channels: [16, 16, 16, 16, 48]
      attention_channels: 8
      embedding_dim: 16
      crop_seconds: 1.0
      lr: 0.005
      stages: [I, II]
      stage2_anonymizers: [{use: world-shift}]
      stage1: {epochs: 2, batch_size: 8, grad_accumulation: 1, dropout: 0.0}
      stage2: {epochs: 2, batch_size: 8, grad_accumulation: 1}
  - use: dast
    label: dast-I+II+III
    train_on: anonymized
    init_from: dast-I+II
    params:
      <<: *tiny
      stages: [III]
      stage3_fraction: 0.5
      stage3: {epochs: 2, batch_size: 8}
protocols: [O-O, A-A]
metrics: [eer]
"""


@pytest.mark.slow
def test_stage3_starts_from_the_cached_stage2_model(tmp_path):
    exp = load_experiment_text(EXPERIMENT, "dast.yaml")
    first = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
    trained = first.executed["train"]
    assert any("dast-I+II+III" in label for label in trained) and any(
        label.startswith("dast-I+II") for label in trained
    )
    stage2 = list((tmp_path / "cache" / "train").rglob("stages/II/network.pt"))
    stage3 = list((tmp_path / "cache" / "train").rglob("stages/III/network.pt"))
    assert len(stage2) == 1 and len(stage3) == 1  # the Stage I+II model was trained once
    import json

    done = json.loads((stage3[0].parent.parent.parent / "config.json").read_text())["stages_done"]
    assert done == ["I", "II", "III"]
    eers = {
        (r["attacker"], r["protocol"]): r["value"] for r in first.rows if r["metric"] == "eer" and r["gender"] == "all"
    }
    assert any(a.startswith("dast-I+II+III") for a, _ in eers)
    again = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run2", quiet=True).run()
    assert not again.executed.get("train")
