"""The dask executor on a LocalCluster of 2 worker processes (conftest: one for the session): the same
anonymized bytes and numbers as the local executor, a killed worker's task rerun without a wrong
result, and one clear sentence for a scheduler that does not answer."""

import os
from pathlib import Path

import pytest

from vpeval.api import PluginContext
from vpeval.atomic import atomic_file
from vpeval.config import load_experiment_text
from vpeval.errors import PluginError
from vpeval.run.runner import Runner
from vpeval_dask.executor import DaskExecutor

EXPERIMENT = """\
name: dask-test
seed: 11
data:
  corpus: tiny-executor-corpus
  attacker_train_speakers: 0
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers:
  - {use: mcadams}
  - {use: mcadams, level: speaker, label: mcadams-speaker, params: {alpha_range: [0.6, 0.7], lp_order: 16}}
attackers:
  - tiny-mfcc
protocols: [O-O, O-A, A-A]
metrics: [tiny-eer]
"""


def run(root: Path, text: str):
    return Runner(
        load_experiment_text(text, "exp.yaml"), cache_root=root / "cache", output=root / "run", quiet=True
    ).run()


def test_dask_gives_the_local_executors_bytes_and_numbers(tmp_path, tiny_plugins, cluster):
    local = run(tmp_path / "local", EXPERIMENT)
    dask_text = EXPERIMENT + f"executor: {{use: dask, params: {{address: '{cluster.scheduler_address}', batch: 3}}}}\n"
    distributed = run(tmp_path / "dask", dask_text)
    assert [r["value"] for r in distributed.rows] == [r["value"] for r in local.rows]
    assert (tmp_path / "dask" / "run" / "results.json").read_text().count('"value"') > 0
    files = {}
    for name in ("local", "dask"):
        files[name] = {
            p.relative_to(tmp_path / name / "cache").as_posix(): p.read_bytes()
            for p in (tmp_path / name / "cache" / "anonymize").rglob("*.wav")
        }
    assert len(files["local"]) >= 32 and files["dask"] == files["local"]


def write_square(job):
    """Writes item^2 atomically; the first attempt at item 5 kills its worker half-way through the write."""
    out, marker, item = job
    with atomic_file(Path(out) / f"{item}.txt") as tmp:
        tmp.write_text("partial")
        if item == 5 and not Path(marker).exists():
            Path(marker).write_text(str(os.getpid()))
            os._exit(1)
        tmp.write_text(str(item * item))
    return item


def test_a_killed_worker_is_replaced_and_its_task_rerun(tmp_path, executor):
    out, marker = tmp_path / "out", tmp_path / "killed"
    out.mkdir()
    dask = executor(tmp_path, batch=2)
    done = sorted(dask.map(write_square, [(str(out), str(marker), i) for i in range(12)], "squares"))
    assert marker.exists(), "the first attempt at item 5 did not run (nothing was killed)"
    assert done == list(range(12))
    finished = {p.name: p.read_text() for p in out.iterdir() if not p.name.startswith(".part-")}
    assert finished == {f"{i}.txt": str(i * i) for i in range(12)}
    cut_off = [p.name for p in out.iterdir() if p.name.startswith(".part-")]
    assert cut_off == [f".part-{marker.read_text()}-5.txt"], "only the killed write is left, under its temporary name"


def raise_once(job):
    marker, item = job
    if item == 1 and not Path(marker).exists():
        Path(marker).touch()
        raise RuntimeError("transient")
    return item


def test_a_task_that_raised_is_retried(tmp_path, executor):
    marker = tmp_path / "raised"
    assert sorted(executor(tmp_path, batch=1).map(raise_once, [(str(marker), i) for i in range(3)])) == [0, 1, 2]
    assert marker.exists()


def test_a_scheduler_that_does_not_answer_is_one_sentence(tmp_path):
    dask = DaskExecutor(DaskExecutor.Params(address="tcp://127.0.0.1:9", connect_timeout=1), PluginContext())
    with pytest.raises(PluginError, match="no Dask scheduler at tcp://127.0.0.1:9: nothing accepts connections there"):
        list(dask.map(abs, [1]))
