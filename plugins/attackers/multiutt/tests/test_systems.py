"""Each system trains on a tiny corpus and tells held-out speakers apart; checkpoints round-trip."""

from __future__ import annotations

import pytest
import torch

from vpeval.api import PluginContext
from vpeval.errors import ConfigError
from vpeval.types import TrainingData, TrainingStage
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.params import CPU_TEST_SIZE

# Bigger than CPU_TEST_SIZE so that a few seconds of training learn something measurable.
SYSTEM_TEST = {
    **CPU_TEST_SIZE,
    "channels": [32, 32, 32, 32, 96],
    "embedding_dim": 32,
    "crop_seconds": 1.0,
    "speakers_per_batch": 7,
    "epochs": 10,
    "text_epochs": 8,
    "text_dim": 32,
    "text_batch_speakers": 14,  # every training speaker a negative in each contrastive batch
    "text_head_lr": 1e-3,
    "fusion_epochs": 6,
    "transcripts": "corpus",
}
CHANCE_MARGIN = 0.35  # chance is 0.5; every system must stay clearly below
HYBRID_MARGIN = 0.40  # the hybrid's held-out EER spreads more over seeds and CPUs (test_hybrid_learns_speakers)
ROUND_TRIP = {"rtol": 1e-5, "atol": 1e-6}  # float32 networks: MKL's sums may round differently between two
# copies of the same weights (measured 1.5e-7 on an AVX-512 core); a wrong load differs by far more


def train(system: str, corpus, work, **overrides) -> MultiUttAttacker:
    params = MultiUttAttacker.Params(**{**SYSTEM_TEST, "system": system, **overrides})
    attacker = MultiUttAttacker(params, PluginContext(seed=1, work_dir=work))
    attacker.train(TrainingData([TrainingStage("original", corpus)]))
    return attacker


@pytest.mark.parametrize(
    "system",
    [
        pytest.param("mean", marks=pytest.mark.slow),
        pytest.param("query-attention", marks=pytest.mark.slow),
        "frame-concat",
    ],
)
def test_audio_system_learns_speakers(system, train_corpus, heldout, tmp_path, eer_of):
    attacker = train(system, train_corpus, tmp_path)
    losses = [r.loss for r in attacker.history.epochs]
    assert losses[-1] < 0.5 * losses[0]
    untrained = MultiUttAttacker(attacker.params, PluginContext(seed=1, work_dir=tmp_path / "u"))
    untrained.audio = untrained._build_audio(untrained._audio_config())  # the weights training started from
    untrained.audio.eval()
    if untrained.params.trains_fusion:  # two-stage query attention: its query too
        untrained.fusion = untrained._build_fusion().eval()
    before, after = eer_of(untrained, heldout), eer_of(attacker, heldout)
    assert after < CHANCE_MARGIN, f"{system}: held-out EER {after:.2%} is not clearly below chance"
    assert after < before, f"{system}: training did not help ({before:.2%} -> {after:.2%})"


def test_text_system_reads_word_habits(train_corpus, heldout, tmp_path, eer_of):
    attacker = train("text", train_corpus, tmp_path)
    assert attacker.audio is None and attacker.fusion is None
    assert eer_of(attacker, heldout) < CHANCE_MARGIN
    # Without the word habits the same audio is anonymous to it: transcripts, not audio, carry its evidence.
    shuffled = heldout.subset([u.id for u in heldout.utterances])
    plain = [u.replace(transcript="seven table river paper") for u in shuffled.utterances]
    from vpeval.types import Corpus

    assert eer_of(attacker, Corpus("same-words", plain)) > 0.45


@pytest.fixture(scope="module")
def audio_text(train_corpus, tmp_path_factory):
    return train("audio-text", train_corpus, tmp_path_factory.mktemp("audio-text"))


def test_audio_text_concat_fusion_learns_speakers(audio_text, heldout, eer_of):
    stages = {r.stage for r in audio_text.history.epochs}
    assert stages == {"audio-frame-concat", "text", "fusion-audio-text"}
    assert eer_of(audio_text, heldout) < CHANCE_MARGIN


@pytest.mark.slow
def test_audio_prosody_fusion_learns_speakers(train_corpus, heldout, tmp_path, eer_of):
    attacker = train("audio-prosody", train_corpus, tmp_path)
    assert attacker.fusion.prosody.in_features == 6  # frame level: mean and std over the N utterances
    assert eer_of(attacker, heldout) < CHANCE_MARGIN


@pytest.mark.slow
@pytest.mark.parametrize("system", ["audio-text", "audio-prosody"])
def test_utterance_level_fusion_learns_speakers(system, train_corpus, heldout, tmp_path, eer_of):
    attacker = train(system, train_corpus, tmp_path, fusion_level="utterance")
    assert eer_of(attacker, heldout) < CHANCE_MARGIN


def test_checkpoint_round_trips_with_weights_only(audio_text, heldout, tmp_path, monkeypatch, eer_of):
    audio_text.save(tmp_path)
    calls = []
    real_load = torch.load
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(k) or real_load(*a, **k))
    restored = MultiUttAttacker(audio_text.params, PluginContext(seed=99, work_dir=tmp_path / "w"))
    restored.load(tmp_path)
    assert len(calls) == 3 and all(k.get("weights_only") is True for k in calls)
    sides = [heldout.utterances[:3], heldout.utterances[3:5]]
    torch.testing.assert_close(
        torch.from_numpy(restored.represent_many(sides)),
        torch.from_numpy(audio_text.represent_many(sides)),
        **ROUND_TRIP,
    )
    # A frozen sentence encoder is not copied into every checkpoint: it loads from its package.
    assert all(k.startswith("head.") for k in real_load(tmp_path / "text.pt", weights_only=True))
    other = MultiUttAttacker(MultiUttAttacker.Params(**{**SYSTEM_TEST, "system": "frame-concat"}), PluginContext())
    with pytest.raises(ConfigError, match="system 'audio-text'"):
        other.load(tmp_path)
    wider = MultiUttAttacker(
        MultiUttAttacker.Params(**{**SYSTEM_TEST, "system": "audio-text", "embedding_dim": 48}), PluginContext()
    )
    with pytest.raises(ConfigError, match="audio network"):
        wider.load(tmp_path)


def test_base_share_splits_speakers_between_encoders_and_fusion(train_corpus, tmp_path):
    attacker = MultiUttAttacker(
        MultiUttAttacker.Params(**{**SYSTEM_TEST, "system": "audio-prosody", "base_share": 0.65}),
        PluginContext(seed=1, work_dir=tmp_path),
    )
    base, fusion = attacker._split_speakers(train_corpus)
    base_speakers, fusion_speakers = {u.speaker for u in base}, {u.speaker for u in fusion}
    assert base_speakers.isdisjoint(fusion_speakers)
    assert len(base_speakers) == round(0.65 * len(train_corpus.speakers))
    assert base_speakers | fusion_speakers == set(train_corpus.speakers)


@pytest.mark.slow
def test_hybrid_learns_speakers(train_corpus, heldout, tmp_path, eer_of):
    attacker = train("hybrid", train_corpus, tmp_path, hybrid_epochs=6)
    assert {r.stage for r in attacker.history.epochs} == {"audio-mean", "text", "fusion-hybrid"}
    # Its own bound: on an Intel AVX-512 core (the same seed trains to other weights on another CPU) the
    # context seeds 1-5 measured 0.35 / 0.31 / 0.29 / 0.23 / 0.29 (mean pooling 0.13-0.21); below 0.35
    # on the AMD EPYC the bound was set on. Still clearly below chance (0.5).
    assert eer_of(attacker, heldout) < HYBRID_MARGIN
    attacker.save(tmp_path / "saved")
    restored = MultiUttAttacker(attacker.params, PluginContext(seed=5, work_dir=tmp_path / "r"))
    restored.load(tmp_path / "saved")
    sides = [heldout.utterances[:3], heldout.utterances[3:4]]
    torch.testing.assert_close(
        torch.from_numpy(restored.represent_many(sides)), torch.from_numpy(attacker.represent_many(sides)), **ROUND_TRIP
    )


@pytest.mark.slow
def test_rjca_learns_speakers(train_corpus, heldout, tmp_path, eer_of):
    attacker = train("rjca", train_corpus, tmp_path)
    assert {r.stage for r in attacker.history.epochs} == {"audio-mean", "text", "fusion-rjca"}
    assert eer_of(attacker, heldout) < CHANCE_MARGIN


@pytest.mark.slow
def test_rjca_global_text_repeats_one_text_vector_and_round_trips(train_corpus, heldout, tmp_path, eer_of):
    attacker = train("rjca-global-text", train_corpus, tmp_path, fusion_epochs=15, rjca_dropout=0.1)
    side = [u.transcript for u in heldout.utterances[:3]]
    with torch.no_grad():
        text = attacker._rjca_text([side])
    assert text.shape[:2] == (1, 3) and torch.equal(text[0, 0], text[0, 2])
    # Measured 0.35 here (0.17 for rjca): text and fusion trained on the same 14 speakers, the fusion
    # leans on the over-fitted speaker-level text vector (README); it still beats chance.
    assert eer_of(attacker, heldout) < 0.42
    attacker.save(tmp_path / "saved")
    restored = MultiUttAttacker(attacker.params, PluginContext(seed=5, work_dir=tmp_path / "r"))
    restored.load(tmp_path / "saved")
    sides = [heldout.utterances[:3], heldout.utterances[3:5]]
    torch.testing.assert_close(
        torch.from_numpy(restored.represent_many(sides)), torch.from_numpy(attacker.represent_many(sides)), **ROUND_TRIP
    )


@pytest.mark.slow
def test_ssl_whisper_learns_speakers(train_corpus, heldout, tmp_path, eer_of, monkeypatch):
    from vpeval_multiutt.ssl_whisper import SslWhisper

    seen = set()
    forward = SslWhisper.forward

    def recording(self, frames, frame_positions, whisper, whisper_positions):
        if torch.is_grad_enabled():  # training steps only
            seen.update(frame_positions.tolist())
        return forward(self, frames, frame_positions, whisper, whisper_positions)

    monkeypatch.setattr(SslWhisper, "forward", recording)
    # Filterbanks stand in for the Whisper frames (the default kimi-like frontend is slow on CPU).
    attacker = train("ssl-whisper", train_corpus, tmp_path, cross_frames="fbank", fusion_epochs=15, max_utterances=6)
    assert {r.stage for r in attacker.history.epochs} == {"audio-frame-concat", "fusion-ssl-whisper"}
    # training used every position label a test side may use, not only the first utterances_per_speaker
    assert seen == set(range(attacker.params.max_utterances))
    assert eer_of(attacker, heldout) < CHANCE_MARGIN
    from vpeval.errors import DataError

    with pytest.raises(DataError, match="max_utterances"):
        attacker.represent(heldout.utterances[: attacker.params.max_utterances + 1])


@pytest.mark.slow
def test_fine_tuned_sentence_encoder_is_trained_saved_and_restored(train_corpus, heldout, tmp_path):
    attacker = train(
        "text",
        train_corpus.with_speakers(train_corpus.speakers[:6]),
        tmp_path / "w",
        text_finetune=True,
        text_epochs=1,
        text_lr=1e-4,
    )
    fresh = attacker._build_text()
    tuned = attacker.text.state_dict()
    changed = [k for k, v in fresh.state_dict().items() if k.startswith("sentence.") and not torch.equal(v, tuned[k])]
    assert changed, "fine-tuning left the sentence encoder unchanged"
    attacker.save(tmp_path / "saved")
    assert any(k.startswith("sentence.") for k in torch.load(tmp_path / "saved" / "text.pt", weights_only=True))
    restored = MultiUttAttacker(attacker.params, PluginContext(seed=5, work_dir=tmp_path / "r"))
    restored.load(tmp_path / "saved")
    sides = [heldout.utterances[:2], heldout.utterances[2:4]]
    torch.testing.assert_close(
        torch.from_numpy(restored.represent_many(sides)), torch.from_numpy(attacker.represent_many(sides)), **ROUND_TRIP
    )


def test_init_from_continues_from_the_saved_model(audio_text, train_corpus, tmp_path, monkeypatch):
    """Semi-informed training starts from the lazy model: every part starts at its saved weights."""
    import vpeval_multiutt.training as training

    audio_text.save(tmp_path / "lazy")
    semi = MultiUttAttacker(
        MultiUttAttacker.Params(**{**SYSTEM_TEST, "system": "audio-text", "semi_epochs": 1}),
        PluginContext(seed=2, work_dir=tmp_path / "semi"),
    )
    semi.init_from(tmp_path / "lazy")
    starts = {}
    real_train_aam = training.train_aam

    def spy(modules, *args, **kwargs):
        starts[kwargs["stage"]] = {k: v.clone() for k, v in modules.state_dict().items()}
        return real_train_aam(modules, *args, **kwargs)

    monkeypatch.setattr(training, "train_aam", spy)
    semi.train(TrainingData([TrainingStage("anonymized", train_corpus)], scenario="anonymized"))
    for stage, module in (("audio-frame-concat", audio_text.audio), ("fusion-audio-text", audio_text.fusion)):
        for key, value in module.state_dict().items():
            assert torch.equal(starts[stage][key], value), (stage, key)
    changed = [k for k, v in audio_text.audio.state_dict().items() if not torch.equal(v, semi.audio.state_dict()[k])]
    assert changed, "the audio network was not trained further"


def test_systems_with_the_same_encoder_train_it_once(train_corpus, tmp_path, monkeypatch):
    """The two-stage systems freeze the audio-only system's encoder (IV-C): with one run cache the second
    system loads the first one's encoder, and those are the weights it would have trained itself."""
    import vpeval_multiutt.training as training

    trained = []
    real_train_aam = training.train_aam
    monkeypatch.setattr(training, "train_aam", lambda *a, **k: trained.append(k["stage"]) or real_train_aam(*a, **k))

    def run(system: str, cache: str, **overrides) -> MultiUttAttacker:
        params = MultiUttAttacker.Params(**{**SYSTEM_TEST, "system": system, "epochs": 3, **overrides})
        attacker = MultiUttAttacker(
            params,
            PluginContext(seed=1, work_dir=tmp_path / cache / system, options={"cache_root": str(tmp_path / cache)}),
        )
        attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
        return attacker

    audio_only = run("frame-concat", "one")
    fusion = run("audio-text", "one", fusion="weighted-score")
    assert trained == ["audio-frame-concat"]  # the fusion system trained no audio encoder of its own
    assert "audio-frame-concat" in {r.stage for r in fusion.history.epochs}
    alone = run("audio-text", "other", fusion="weighted-score")  # an empty cache: it trains the encoder itself
    for key, value in audio_only.audio.state_dict().items():
        assert torch.equal(fusion.audio.state_dict()[key], value), key
        assert torch.equal(alone.audio.state_dict()[key], value), key
    run("audio-text", "one", fusion="weighted-score", epochs=2)  # another recipe is another encoder
    assert trained == ["audio-frame-concat"] * 3
