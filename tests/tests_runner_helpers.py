"""A small runner call shared by CLI and report tests."""

from pathlib import Path

from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner

SMALL = """\
name: small-{seed}
seed: {seed}
data:
  corpus: {{use: fake-corpus, params: {{speakers: 8, utterances: 4}}}}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""


def run_small(tmp_path: Path, seed: int = 0):
    exp = load_experiment_text(SMALL.format(seed=seed), "small.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()
