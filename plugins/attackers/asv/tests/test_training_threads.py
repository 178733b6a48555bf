"""A trained ECAPA depends on the experiment only, not on the machine's core count (issue 39, item 3): the run's
`workers` default to every core, so training at max(threads, workers) torch threads gave other weights on a
2-core machine than on a 1-core one (a kernel's sums depend on how many threads split it). Training runs at the
experiment's `threads`."""

from __future__ import annotations

import numpy as np

from vpeval.api import PluginContext
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage
from vpeval_asv.attacker import EcapaAttacker


def test_same_weights_with_one_and_two_workers(tmp_path, tiny_ecapa):
    corpus = make_corpus(tmp_path / "data", speakers=8, utterances=6, seconds=1.5, seed=0)
    train, heldout = corpus.with_speakers(corpus.speakers[:6]), corpus.with_speakers(corpus.speakers[6:])
    vectors = {}
    for workers in (1, 2):
        attacker = EcapaAttacker(
            EcapaAttacker.Params(**{**tiny_ecapa, "epochs": 2}), PluginContext(seed=1, threads=1, workers=workers)
        )
        attacker.train(TrainingData([TrainingStage("original", train)]))
        vectors[workers] = attacker.represent_many([[u] for u in heldout.utterances])
    assert np.isfinite(vectors[1]).all() and np.abs(vectors[1]).max() > 0
    assert np.array_equal(vectors[1], vectors[2])  # the same bits: same experiment, same seed, any core count
