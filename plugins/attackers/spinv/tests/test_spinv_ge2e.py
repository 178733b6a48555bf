"""Slow: SpInv recovers the packaged GE2E space (the default target encoder) on unseen fake speakers."""

import numpy as np
import pytest

from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage
from vpeval_spinv.attacker import SpInv
from vpeval_spinv.presets import TINY


@pytest.mark.slow
def test_recovers_ge2e_embeddings_of_unseen_speakers(tmp_path):
    cpu = pytest.importorskip("vpeval_cpu_frontends.fbank_rvq")
    corpus = make_corpus(tmp_path / "c", speakers=20, utterances=5, seconds=2.5, seed=11)
    train, test = corpus.with_speakers(corpus.speakers[:14]), corpus.with_speakers(corpus.speakers[14:])
    frontend = cpu.FbankRvqFrontend(
        cpu.FbankRvqFrontend.Params(codebook_size=32), plugin_context(seed=0, work_dir=tmp_path / "fe")
    )
    frontend.fit(train)
    params = {
        **TINY,
        "hidden": 64,
        "output_dim": 64,
        "local_seconds": 1.5,
        "global_seconds": 2.5,
        "observed_seconds": 2.0,
        "stage_a_epochs": 30,
        "stage_b_epochs": 10,
        "margin_ramp_start": 3,
        "margin_ramp_end": 6,
    }
    attacker = SpInv(SpInv.Params(**params), plugin_context(seed=0, work_dir=tmp_path / "a"))
    attacker.frontend = frontend
    attacker.train(TrainingData([TrainingStage("original", train)]))
    recovered, target, speakers = attacker.inversion_embeddings(test)
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    cos, own = unit(recovered) @ unit(target).T, unit(target) @ unit(target).T
    same = speakers[:, None] == speakers[None, :]
    other = same & ~np.eye(len(speakers), dtype=bool)
    # GE2E's own contrast on these speakers, and how much of it the recovered embeddings keep
    gap, own_gap = cos[other].mean() - cos[~same].mean(), own[other].mean() - own[~same].mean()
    constant = float(np.mean(unit(target.mean(axis=0, keepdims=True)) @ unit(target).T))  # always the mean z
    print(
        f"CosSim {np.diag(cos).mean():.3f} (constant predictor {constant:.3f}); "
        f"same-diff gap {gap:.3f} (GE2E itself {own_gap:.3f})"
    )
    # Measured 2026-11-30: 44 % of GE2E's contrast on 14 training speakers, CosSim 0.884 below the constant
    # predictor's 0.890 (an untrained G keeps no contrast);
    # with so few speakers SpInv does not get close to the target space (docs/results/spinv.md).
    assert gap > 0.25 * own_gap
    assert np.diag(cos).mean() > np.mean(own[~same])  # nearer its own target than GE2E's typical other speaker
