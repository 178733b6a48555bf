"""Every fusion variant of Table 1 trains on a tiny corpus and tells held-out speakers apart."""

from __future__ import annotations

import pytest

from vpeval.plugins import plugin_context
from vpeval.types import TrainingData, TrainingStage
from vpeval_dast.attacker import DastAttacker


# The product of two randomly initialised streams starts slower than one stream: mid gets more epochs.
@pytest.mark.parametrize(("fusion", "epochs"), [("fbank", 6), ("ssl", 6), ("raw", 6), ("mid", 10)])
def test_fusion_variant_beats_chance_on_heldout_speakers(
    fusion, epochs, train_corpus, heldout, tiny_wavlm, tmp_path, tiny, eer_on
):
    tiny["stage1"] = {**tiny["stage1"], "epochs": epochs}
    params = DastAttacker.Params(**tiny, fusion=fusion, ssl={"kind": "wavlm", "path": str(tiny_wavlm)})
    attacker = DastAttacker(params, plugin_context(seed=1, work_dir=tmp_path))
    untrained = eer_on(_untrained(params, tmp_path), heldout)
    attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
    losses = attacker.stage_records[-1].losses
    assert losses[-1] < 0.8 * losses[0]
    if fusion != "fbank":  # the layer weighting is trained along (it starts uniform)
        assert attacker.embedder.network.layer_weights.logits.detach().abs().max() > 0
    # 8 held-out speakers x 6 utterances: 120 target and 1008 non-target pairs, so 40 % is more than two
    # standard errors below chance; random-weight SSL features are weak, so the SSL-only stream is near it
    eer = eer_on(attacker, heldout)
    assert eer < 0.4, f"{fusion}: held-out EER {eer:.1%} is not clearly below chance (untrained {untrained:.1%})"


def _untrained(params, tmp_path) -> DastAttacker:
    attacker = DastAttacker(params, plugin_context(seed=1, work_dir=tmp_path / "untrained"))
    attacker._embedder = attacker._new_embedder()
    return attacker


@pytest.mark.slow
def test_whisper_folder_stream_trains(train_corpus, heldout, tiny_whisper, tmp_path, tiny, eer_on):
    """The SSL stream also runs on a transformers Whisper encoder (every layer's hidden states)."""
    tiny["stage1"] = {**tiny["stage1"], "epochs": 10}
    params = DastAttacker.Params(**tiny, fusion="mid", ssl={"kind": "whisper", "path": str(tiny_whisper)})
    attacker = DastAttacker(params, plugin_context(seed=1, work_dir=tmp_path))
    attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
    assert attacker.embedder.network.config.ssl_layers == 2
    assert eer_on(attacker, heldout) < 0.4
