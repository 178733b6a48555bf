"""Plugins' per-utterance stages (PluginContext.map) on the dask executor: an embed stage (ge2e) and a
frontend stage (fbank-rvq features, token-probe encode) run on the cluster's workers with the local
run's numbers and cached vectors; the function is unpickled once per worker, not once per batch; a
function that cannot be pickled runs here with one note naming its stage; a worker killed mid-map is
replaced without a wrong or missing result."""

from __future__ import annotations

import copy
import logging
import os
import pickle
import threading
import time
from pathlib import Path

import pytest
import torch

from vpeval.api import PluginContext
from vpeval.config import load_experiment_text
from vpeval.errors import PluginError
from vpeval.run.runner import Runner

EXPERIMENT = """\
name: dask-map-test
seed: 5
data:
  corpus: tiny-executor-corpus
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
attackers:
  - ge2e
  - {use: token-probe, params: {pca_dim: 8, lda_dim: 3},
     frontend: {use: fbank-rvq, params: {num_codebooks: 2, codebook_size: 16}}}
protocols: [O-O]
metrics: [tiny-eer]
"""


def run(root: Path, text: str):
    return Runner(
        load_experiment_text(text, "exp.yaml"), cache_root=root / "cache", output=root / "run", quiet=True
    ).run()


def cached_vectors(root: Path) -> dict[str, bytes]:
    """The run's content cache (per-utterance embeddings and statistics), by relative path."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "cache" / "content").rglob("*.npy")}


def finished_keys(client) -> set[str]:
    return client.run_on_scheduler(
        lambda dask_scheduler: {str(e[0]) for e in dask_scheduler.transition_log if e[2] == "memory"}
    )


def test_embed_and_frontend_stages_run_on_the_workers_with_the_local_numbers(tmp_path, tiny_plugins, cluster):
    local = run(tmp_path / "local", EXPERIMENT)
    dask_text = EXPERIMENT + f"executor: {{use: dask, params: {{address: '{cluster.scheduler_address}', batch: 4}}}}\n"
    distributed = run(tmp_path / "dask", dask_text)
    assert len(local.rows) >= 2 and [r["value"] for r in distributed.rows] == [r["value"] for r in local.rows]
    vectors = cached_vectors(tmp_path / "local")
    assert len(vectors) >= 3 * 32 // 2 and cached_vectors(tmp_path / "dask") == vectors  # same bits
    from distributed import Client

    with Client(cluster.scheduler_address) as client:
        stages = {key.rsplit("-", 2)[0] for key in finished_keys(client)}
    for stage in ("ge2e", "fbank-rvq", "token-probe"):
        assert any(s.startswith(f"vpeval-{stage}") for s in stages), (
            f"no {stage} task ran on the workers: {sorted(stages)}"
        )
    note = (tmp_path / "dask" / "run" / "run.log").read_text()
    assert "cannot be pickled" not in note


class LoadCounter:
    """Appends this process's id to `path` whenever it is unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (count_load, (self.path,))


def count_load(path: str) -> LoadCounter:
    with open(path, "a") as file:
        file.write(f"{os.getpid()}\n")
    return LoadCounter(path)


def test_a_map_function_is_unpickled_once_per_worker_not_per_batch(tmp_path, executor):
    loads = tmp_path / "loads"
    counter = LoadCounter(str(loads))
    context = PluginContext(executor=executor(batch=1))
    results = context.map(lambda x: (x * 3, os.getpid(), counter.path), list(range(10)), "counted")
    assert [value for value, _, _ in results] == [x * 3 for x in range(10)]
    pids = loads.read_text().split()
    assert os.getpid() not in {pid for _, pid, _ in results}, "the map ran in this process"
    assert sorted(pids) == sorted({str(pid) for _, pid, _ in results}), "one load per worker process that ran tasks"


def test_workers_run_torch_with_the_experiments_threads(executor):
    context = PluginContext(executor=executor(threads=2))
    assert context.map(lambda x: torch.get_num_threads(), list(range(4)), "threads") == [2] * 4


def test_an_unpicklable_function_runs_here_with_one_note_naming_the_stage(executor, caplog):
    lock = threading.Lock()  # a lock cannot be pickled: the closure stays in this process

    def locked(x):
        with lock:
            return x * x, os.getpid()

    context = PluginContext(executor=executor(workers=1))
    with caplog.at_level(logging.WARNING):
        first = context.map(locked, list(range(7)), "locked stage")
        second = context.map(locked, list(range(3)), "locked stage")
    assert first == [(x * x, os.getpid()) for x in range(7)] and second == first[:3]
    notes = [r.getMessage() for r in caplog.records if "cannot be pickled" in r.getMessage()]
    assert len(notes) == 1 and "locked stage" in notes[0] and "lock" in notes[0]


def test_a_worker_killed_mid_map_is_replaced_and_every_result_is_right(tmp_path, executor):
    marker, here = tmp_path / "killed", os.getpid()

    def square_or_die(x):
        if x == 5 and os.getpid() != here and not marker.exists():  # never this test's own process
            marker.write_text(str(os.getpid()))
            os._exit(1)
        return x * x

    context = PluginContext(executor=executor(tmp_path, batch=2))
    assert context.map(square_or_die, list(range(12)), "killed map") == [x * x for x in range(12)]
    assert marker.exists(), "the first attempt at item 5 did not run (nothing was killed)"


def test_a_map_whose_every_worker_died_sends_its_function_again(tmp_path, own_executor):
    """Both workers die at once on their first item: the scattered function dies with them (Dask cannot
    recompute scattered data), so the executor scatters it again for the batches not yet done."""
    here = os.getpid()

    def die_once_per_item(x):
        if x < 2 and os.getpid() != here and not list(tmp_path.glob(f"died-*-{x}")):
            (tmp_path / f"died-{os.getpid()}-{x}").touch()
            time.sleep(0.5)  # the other worker reaches its item before this one is gone
            os._exit(1)
        return -x

    context = PluginContext(executor=own_executor(tmp_path, batch=1))
    assert context.map(die_once_per_item, list(range(6)), "all died") == [-x for x in range(6)]
    assert len({p.name.split("-")[1] for p in tmp_path.glob("died-*")}) == 2, "two worker processes died"


def test_a_function_that_kills_every_worker_is_one_sentence_after_its_retries(tmp_path, own_executor):
    """Rounds that lose the function before finishing a batch count against retries; the last one ends
    the map with one sentence (not an endless loop of restarted workers)."""
    here = os.getpid()

    def always_die(x):
        if os.getpid() != here:
            (tmp_path / f"died-{os.getpid()}").touch()
            os._exit(1)
        return x

    context = PluginContext(executor=own_executor(tmp_path, batch=1, retries=1))
    with pytest.raises(
        PluginError, match=r"every worker holding its function died 2 times in a row before finishing a batch; check"
    ):
        context.map(always_die, list(range(4)), "doomed")


def test_a_context_sent_to_a_worker_leaves_the_runs_parts_here(tmp_path):
    context = PluginContext(
        seed=7,
        work_dir=tmp_path,
        threads=2,
        workers=4,
        log=logging.getLogger("vpeval.x"),
        plugin_factory=lambda *a: None,
        progress_factory=lambda *a, **k: a[0],
        options={"cache_root": tmp_path},
        executor=object(),
    )
    shipped = pickle.loads(pickle.dumps(context))
    assert (shipped.seed, shipped.work_dir, shipped.threads, shipped.options) == (
        7,
        tmp_path,
        2,
        {"cache_root": tmp_path},
    )
    assert shipped.log is logging.getLogger("vpeval.x")
    assert (shipped.plugin_factory, shipped.progress_factory, shipped.executor, shipped.workers) == (
        None,
        None,
        None,
        1,
    )
    assert context.executor is not None and context.workers == 4  # the original keeps them
    assert copy.copy(context).plugin_factory is context.plugin_factory  # a copy in this process does too
