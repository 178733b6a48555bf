"""The executor seam: `executor:` in the experiment, the built-in local executor, and the picklable
anonymization task that cluster executors run (rebuilding the chain gives the same bytes)."""

from pathlib import Path

import cloudpickle
import pytest
import yaml

from vpeval.builtin.local_executor import LocalProcesses
from vpeval.config import ResolvedPlugin, load_experiment_text
from vpeval.errors import ConfigError, PluginError
from vpeval.plugins import get_plugin_manager
from vpeval.run.anonymize_task import AnonymizeTask
from vpeval.run.runner import Runner

EXPERIMENT = """\
name: executor-test
seed: 3
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers:
  - {use: fake-shift}
attackers:
  - {use: fake-spectrum, train_on: original}
protocols: [O-O, O-A]
metrics: [fake-eer]
"""


def run(tmp_path: Path, text: str = EXPERIMENT, folder: str = "run"):
    exp = load_experiment_text(text, "exp.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / folder, quiet=True).run()


def test_the_local_executor_is_registered_by_the_core():
    cls = get_plugin_manager().get("executor", "local")
    assert cls is LocalProcesses and cls.distribution == "vpeval"


def test_executor_is_not_part_of_any_cache_key(tmp_path, fake_plugins):
    first = run(tmp_path)
    assert "anonymize" in first.executed
    again = run(tmp_path, EXPERIMENT + "executor: {use: local, params: {workers: 2}}\n", folder="again")
    assert not again.executed, f"a run that only changes the executor recomputed {sorted(again.executed)}"
    assert [r["value"] for r in again.rows] == [r["value"] for r in first.rows]
    resolved = yaml.safe_load((tmp_path / "again" / "resolved.yaml").read_text())
    assert resolved["executor"]["use"] == "local" and resolved["executor"]["params"] == {"workers": 2}


def test_local_executor_workers_default_to_the_experiments_workers(fake_plugins):
    exp = load_experiment_text(EXPERIMENT + "workers: 3\nexecutor: local\n", "exp.yaml")
    assert exp.executor is not None and exp.executor.params == {"workers": None}
    from vpeval.api import PluginContext

    assert LocalProcesses(context=PluginContext(workers=3)).workers == 3
    assert LocalProcesses(LocalProcesses.Params(workers=2), PluginContext(workers=3)).workers == 2


@pytest.mark.parametrize(
    ("line", "where", "words"),
    [
        ("executor: {use: dusk}", "executor.use", "did you mean 'dask'"),
        ("executor: {use: local, params: {workers: 0}}", "executor.params.workers", "greater than or equal to 1"),
    ],
)
def test_a_wrong_executor_is_refused_at_validation_naming_the_field(fake_plugins, line, where, words):
    with pytest.raises(ConfigError) as error:
        load_experiment_text(EXPERIMENT + line + "\n", "exp.yaml")
    assert where in str(error.value) and words in str(error.value)


def test_a_rebuilt_chain_writes_the_same_bytes_as_the_runs_prepared_one(tmp_path, fake_plugins):
    """What a cluster worker does: unpickle the task, build and prepare the chain from the registry."""
    exp = load_experiment_text(EXPERIMENT, "exp.yaml")
    runner = Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True)
    result = runner.run()
    anon = exp.anonymizers[0]
    written = {Path(u.path).name: Path(u.path).read_bytes() for u in result.anonymized[anon.label].utterances}
    task = AnonymizeTask(anon, exp.experiment.seed, 1, tmp_path / "cache", tmp_path / "rebuilt")
    shipped = cloudpickle.loads(cloudpickle.dumps(task))
    for utt in runner.state.plan.evaluation.utterances:
        shipped(utt)
    rebuilt = {p.name: p.read_bytes() for p in (tmp_path / "rebuilt").iterdir()}
    assert len(rebuilt) == len(written) > 0 and rebuilt == written


def test_a_worker_with_other_plugin_code_refuses_the_task(tmp_path, fake_plugins):
    exp = load_experiment_text(EXPERIMENT, "exp.yaml")
    anon = exp.anonymizers[0]
    changed = anon.model_copy(update={"steps": [ResolvedPlugin(**{**anon.steps[0].model_dump(), "code": "0" * 16})]})
    task = AnonymizeTask(changed, 3, 1, tmp_path / "cache", tmp_path / "out")
    with pytest.raises(PluginError, match="install the same plugin version and code on every worker"):
        task._steps()
