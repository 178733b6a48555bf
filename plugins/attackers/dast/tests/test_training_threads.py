"""A trained DAST network depends on the experiment only, not on the machine's core count (issue 39, item 3):
training runs at the experiment's `threads` torch threads, not at max(threads, workers), since `workers`
defaults to every core and a kernel's sums depend on how many threads split it."""

from __future__ import annotations

import numpy as np

from vpeval.plugins import plugin_context
from vpeval.types import TrainingData, TrainingStage
from vpeval_dast.attacker import DastAttacker


def test_same_weights_with_one_and_two_workers(train_corpus, heldout, tiny, tmp_path):
    params = {**tiny, "channels": [32, 32, 32, 32, 96], "embedding_dim": 32}
    params["stage1"] = {**tiny["stage1"], "epochs": 2}
    vectors = {}
    for workers in (1, 2):
        context = plugin_context(seed=1, work_dir=tmp_path / f"w{workers}", threads=1, workers=workers)
        attacker = DastAttacker(DastAttacker.Params(**params), context)
        attacker.train(TrainingData([TrainingStage("original", train_corpus.with_speakers(train_corpus.speakers[:6]))]))
        vectors[workers] = attacker.represent_many([[u] for u in heldout.utterances])
    assert np.isfinite(vectors[1]).all() and np.abs(vectors[1]).max() > 0
    assert np.array_equal(vectors[1], vectors[2])  # the same bits: same experiment, same seed, any core count
