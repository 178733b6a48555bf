"""Fast versions of the slow behaviour tests, in the default run: mean, query attention (two-stage, the
paper's), hybrid, RJCA and SSL-Whisper each train at a tiny size on the 14-speaker idiolect corpus and must
tell the 8 held-out speakers apart clearly better than chance, and better than their untrained weights.

The systems share one run cache, as the systems of an experiment do: the two-stage ones freeze the same
single-utterance ECAPA and authorship encoder trained once on the base speakers (shared.py), so each test
after the first trains only its own fusion layers. The slow tests in test_systems.py keep the larger sizes.
"""

from __future__ import annotations

import pytest
import torch

from vpeval.api import PluginContext
from vpeval.types import TrainingData, TrainingStage
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.params import CPU_TEST_SIZE

FAST = {
    **CPU_TEST_SIZE,
    "crop_seconds": 1.0,
    "speakers_per_batch": 7,
    "epochs": 8,
    "text_epochs": 6,
    "text_batch_speakers": 9,
    "text_head_lr": 1e-3,
    "fusion_epochs": 8,
    "hybrid_epochs": 8,
    "transcripts": "corpus",
}
CHANCE_MARGIN = 0.35  # chance is 0.5
# hybrid and RJCA: the paper's 65/35 split leaves 5 fusion speakers of 14, too few to learn cross-attention
# from (measured 35-38 % held-out EER); one set for both stages, as the slow tests train them.
ONE_SET = {"base_share": 1.0}


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("fast-cache")


def train(system: str, corpus, cache, **overrides) -> MultiUttAttacker:
    params = MultiUttAttacker.Params(**{**FAST, "system": system, **overrides})
    context = PluginContext(seed=1, work_dir=cache / system, options={"cache_root": str(cache)})
    attacker = MultiUttAttacker(params, context)
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    return attacker


def untrained(attacker: MultiUttAttacker) -> MultiUttAttacker:
    """The same system at the weights its training started from (no training at all)."""
    fresh = MultiUttAttacker(attacker.params, PluginContext(seed=1, work_dir=attacker.context.work_dir / "u"))
    if fresh.uses_audio:
        fresh.audio = fresh._build_audio(fresh._audio_config())
    if fresh.uses_text:
        fresh.text = fresh._build_text()
    fresh.prosody_mean, fresh.prosody_std = attacker.prosody_mean, attacker.prosody_std
    if fresh.params.trains_fusion:
        fresh.fusion = fresh._build_fusion()
    return fresh


def check_learns(attacker, heldout, eer_of, than_untrained: bool = True) -> float:
    """Held-out EER clearly below chance and (audio systems) below the untrained weights' EER. Text
    systems are not held to the second: the frozen MiniLM under a random head already reads word habits
    (about 27-29 % here, the README's observation), so their test is chance and what the fusion reads."""
    after = eer_of(attacker, heldout)
    assert after < CHANCE_MARGIN, f"{attacker.system}: held-out EER {after:.2%} is not clearly below chance"
    if than_untrained:
        before = eer_of(untrained(attacker), heldout)
        assert after < before, f"{attacker.system}: training did not help ({before:.2%} -> {after:.2%})"
    return after


def test_mean_pooling_learns_speakers(train_corpus, heldout, cache, eer_of):
    attacker = train("mean", train_corpus, cache)
    assert {r.stage for r in attacker.history.epochs} == {"audio-mean"}
    check_learns(attacker, heldout, eer_of)


def test_query_attention_two_stage_learns_on_a_frozen_encoder(train_corpus, heldout, cache, eer_of, monkeypatch):
    import vpeval_multiutt.training as training

    frozen = {}
    real = training.train_aam

    def spy(modules, *args, **kwargs):
        if kwargs["stage"] == "fusion-query-attention":
            frozen["before"] = {k: v.clone() for k, v in attacker_audio().state_dict().items()}
        return real(modules, *args, **kwargs)

    holder = {}
    attacker_audio = lambda: holder["a"].audio  # noqa: E731
    monkeypatch.setattr(training, "train_aam", spy)
    params = MultiUttAttacker.Params(**{**FAST, "system": "query-attention"})
    context = PluginContext(seed=1, work_dir=cache / "qa", options={"cache_root": str(cache)})
    attacker = MultiUttAttacker(params, context)
    holder["a"] = attacker
    attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
    assert {r.stage for r in attacker.history.epochs} == {"audio-mean", "fusion-query-attention"}
    # the encoder stayed frozen while the query trained (IV-C two-stage)
    assert all(torch.equal(v, attacker.audio.state_dict()[k]) for k, v in frozen["before"].items())
    check_learns(attacker, heldout, eer_of)


def _reads_both(attacker, heldout) -> None:
    """The fused vector changes with the audio and with the transcripts of the side."""
    side = heldout.utterances[:2]
    other_words = [u.replace(transcript="seven table river paper") for u in side]
    other_audio = [u.replace(path=w.path) for u, w in zip(side, heldout.utterances[8:10])]
    base = attacker.represent(side)
    assert abs(attacker.score(base[None], attacker.represent(other_words)[None])[0] - 1) > 1e-4
    assert abs(attacker.score(base[None], attacker.represent(other_audio)[None])[0] - 1) > 1e-4


def test_hybrid_learns_speakers(train_corpus, heldout, cache, eer_of):
    attacker = train("hybrid", train_corpus, cache, **ONE_SET)
    assert {r.stage for r in attacker.history.epochs} == {"audio-mean", "text", "fusion-hybrid"}
    check_learns(attacker, heldout, eer_of, than_untrained=False)
    _reads_both(attacker, heldout)


def test_rjca_learns_speakers(train_corpus, heldout, cache, eer_of):
    attacker = train("rjca", train_corpus, cache, rjca_dropout=0.1, **ONE_SET)
    assert {r.stage for r in attacker.history.epochs} == {"audio-mean", "text", "fusion-rjca"}
    check_learns(attacker, heldout, eer_of, than_untrained=False)
    _reads_both(attacker, heldout)


def test_ssl_whisper_learns_speakers(train_corpus, heldout, cache, eer_of):
    # Filterbanks stand in for the Whisper frames (the default kimi-like frontend is slow on CPU).
    attacker = train("ssl-whisper", train_corpus, cache, cross_frames="fbank", max_utterances=4)
    assert {r.stage for r in attacker.history.epochs} == {"audio-frame-concat", "fusion-ssl-whisper"}
    check_learns(attacker, heldout, eer_of)
