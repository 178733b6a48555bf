"""PluginContext.map: per-item work on the context's one executor, results in item order; the content cache."""

from __future__ import annotations

import os
import shutil

import numpy as np
import soundfile as sf

from vpeval.api import PluginContext
from vpeval.content_cache import cached_map, identity_digest
from vpeval.plugins import plugin_context
from vpeval.types import Utterance


def test_map_keeps_item_order_and_uses_worker_processes(tmp_path):
    items = list(range(23))
    serial = plugin_context(work_dir=tmp_path, workers=1).map(lambda x: (x * x, os.getpid()), items)
    parallel = plugin_context(work_dir=tmp_path, workers=2).map(lambda x: (x * x, os.getpid()), items)
    assert [value for value, _ in serial] == [value for value, _ in parallel] == [x * x for x in items]
    assert {pid for _, pid in serial} == {os.getpid()}
    assert os.getpid() not in {pid for _, pid in parallel}  # forked workers did the work


def test_the_executor_alone_decides_where_map_runs(tmp_path):
    """`workers` has one owner: the executor the context carries (the runner's, or plugin_context's)."""
    bare = PluginContext(work_dir=tmp_path, workers=2)  # no executor: this process, whatever `workers` says
    assert bare.map(lambda x: os.getpid(), [1, 2, 3]) == [os.getpid()] * 3
    context = plugin_context(work_dir=tmp_path, workers=2)
    assert context.executor is not None and context.executor.workers == 2
    assert context.child("helper").executor is context.executor  # helpers share it: one pool size per run

    class Recording:
        calls: list[str] = []

        def map(self, func, items, description=""):
            self.calls.append(description)
            return [func(item) for item in items]

    recorded = PluginContext(work_dir=tmp_path, workers=2, executor=Recording())
    assert recorded.map(lambda x: x + 1, [1, 2], "embed") == [2, 3] and Recording.calls == ["embed"]


def test_map_inside_a_worker_runs_in_process(tmp_path):
    context = plugin_context(work_dir=tmp_path, workers=2)

    def outer(x):
        inner = context.map(lambda y: os.getpid(), [1, 2, 3])
        return set(inner) == {os.getpid()}

    assert all(context.map(outer, [1, 2]))


def test_child_context_keeps_workers(tmp_path):
    assert PluginContext(work_dir=tmp_path, workers=3).child("x").workers == 3


def _utterance(folder, name, samples):
    path = folder / f"{name}.wav"
    sf.write(path, samples, 16000)
    return Utterance(name, "spk", str(path))


def test_cached_map_keys_by_content_and_extractor(tmp_path):
    rng = np.random.default_rng(0)
    audio = [rng.normal(0, 0.1, 1600).astype(np.float32) for _ in range(3)]
    utts = [_utterance(tmp_path, f"u{i}", a) for i, a in enumerate(audio)]
    context = PluginContext(work_dir=tmp_path / "work", options={"cache_root": tmp_path / "cache"})
    calls: list[str] = []

    def energy(u):
        calls.append(u.id)
        return np.array([float(np.square(sf.read(u.path)[0]).sum())])

    first = cached_map(context, utts, "energy-1", energy)
    assert calls == ["u0", "u1", "u2"]
    again = cached_map(context, utts, "energy-1", energy)
    assert calls == ["u0", "u1", "u2"] and all(np.array_equal(a, b) for a, b in zip(first, again))
    # A renamed copy has the same content: served from the cache.
    shutil.copy(utts[0].path, tmp_path / "copy.wav")
    cached_map(context, [Utterance("copy", "spk", str(tmp_path / "copy.wav"))], "energy-1", energy)
    assert calls == ["u0", "u1", "u2"]
    # Changed audio, or another extractor identity (say, retrained weights): computed again.
    sf.write(utts[1].path, audio[1] * 2, 16000)
    changed = cached_map(context, utts, "energy-1", energy)
    assert calls[3:] == ["u1"] and np.isclose(changed[1][0], 4 * first[1][0], rtol=1e-3)
    cached_map(context, utts[:1], "energy-2", energy)
    assert calls[4:] == ["u0"]


def test_cached_map_in_parallel_matches_serial(tmp_path):
    rng = np.random.default_rng(1)
    utts = [_utterance(tmp_path, f"u{i}", rng.normal(0, 0.1, 800).astype(np.float32)) for i in range(9)]

    def mean(u):
        return np.array([sf.read(u.path)[0].mean()])

    serial = cached_map(PluginContext(work_dir=tmp_path, workers=1), utts, "m", mean)
    parallel_context = plugin_context(work_dir=tmp_path, workers=2, options={"cache_root": tmp_path / "c"})
    parallel = cached_map(parallel_context, utts, "m", mean)
    assert all(np.array_equal(a, b) for a, b in zip(serial, parallel))
    assert len(list((tmp_path / "c").rglob("*.npy"))) == 9  # written by the workers, atomically


def test_identity_digest_sees_array_values():
    weights = np.zeros(4)
    assert identity_digest("x", weights) == identity_digest("x", np.zeros(4))
    assert identity_digest("x", weights) != identity_digest("x", np.ones(4))
