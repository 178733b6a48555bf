"""A poolvc instance on a small generated pool, for benchmarks/anonymizer_speed.py."""

from __future__ import annotations

import csv

from vpeval.api import PluginContext
from vpeval.testing.dummies import make_corpus
from vpeval_poolvc.anonymizer import PoolVC


def make_benchmark_anonymizer(context: PluginContext) -> PoolVC:
    """poolvc with a 4-speaker dummy pool written under the context's work_dir (random choice)."""
    folder = context.folder("bench-pool")
    corpus = make_corpus(folder, speakers=4, utterances=3, sample_rate=16000, seconds=2.0, seed=123, name="pool")
    manifest = folder / "pool.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "gender", "transcript"])
        for u in corpus.utterances:
            writer.writerow([u.path, u.speaker, u.gender, u.transcript])
    params = PoolVC.Params(pool={"use": "manifest", "params": {"path": str(manifest)}}, selection="random")
    anonymizer = PoolVC(params, context)
    anonymizer.prepare()
    return anonymizer
