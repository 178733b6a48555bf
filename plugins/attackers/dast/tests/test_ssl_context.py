"""ssl_context: utterance computes the frozen SSL model once per utterance and run (stored on disk,
memory-mapped, shared by the run's dast attackers for training and embedding) and crops its frames with
the audio; the crop and its frames cover the same stretch, and the network still learns. No SSL states
are kept in RAM."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.plugins import plugin_context
from vpeval.types import TrainingData, TrainingStage
from vpeval_dast import embedding
from vpeval_dast.attacker import DastAttacker
from vpeval_dast.embedding import random_crop, random_crop_with_frames

HOP = 320


def _numbered(seconds: float) -> tuple[np.ndarray, np.ndarray]:
    """Audio whose sample i is i, and frames [2, T, 3] whose frame t holds t * HOP (the sample it starts at)."""
    audio = np.arange(int(seconds * 16000), dtype=np.float32)
    starts = np.arange(audio.size // HOP, dtype=np.float32) * HOP
    return audio, np.broadcast_to(starts[None, :, None], (2, starts.size, 3)).copy()


def test_crop_and_its_frames_cover_the_same_stretch():
    audio, hidden = _numbered(3.0)
    rng = np.random.default_rng(0)
    for _ in range(50):
        wave, frames = random_crop_with_frames(audio, hidden, 16000, HOP, rng)
        assert wave.size == 16000 and frames.shape == (2, 16000 // HOP, 3)
        assert frames[0, 0, 0] == wave[0]  # the first frame starts where the wave crop starts
        assert np.all(np.diff(frames[0, :, 0]) == HOP)  # consecutive frames, none skipped
    # the same single draw as random_crop: switching ssl_context leaves the rest of the random stream alone
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    random_crop(audio, 16000, a), random_crop_with_frames(audio, hidden, 16000, HOP, b)
    assert a.integers(1 << 30) == b.integers(1 << 30)


def test_short_audio_repeats_frames_like_samples():
    audio, hidden = _numbered(0.5)
    wave, frames = random_crop_with_frames(audio, hidden, 16000, HOP, np.random.default_rng(0))
    assert wave.size == 16000 and frames.shape[1] == 16000 // HOP
    assert frames[0, hidden.shape[1], 0] == 0  # the frames start over where the samples do


@pytest.mark.parametrize("fusion", ["ssl", "mid"])
def test_utterance_context_runs_the_ssl_model_once_per_utterance(
    fusion, train_corpus, heldout, tiny_wavlm, tmp_path, tiny, eer_on
):
    tiny["stage1"] = {**tiny["stage1"], "epochs": 6 if fusion == "ssl" else 10}
    params = DastAttacker.Params(
        **tiny, fusion=fusion, ssl={"kind": "wavlm", "path": str(tiny_wavlm)}, ssl_context="utterance"
    )
    run = {"cache_root": str(tmp_path / "cache")}  # the run cache the store lives in
    attacker = DastAttacker(params, plugin_context(seed=1, work_dir=tmp_path, options=run))
    attacker._ssl_stream()
    calls = []
    real = attacker._ssl.hidden_states
    attacker._ssl.hidden_states = lambda waves: calls.append(waves.shape[0]) or real(waves)
    try:
        attacker.train(TrainingData([TrainingStage("original", train_corpus)]))
        assert calls == [1] * len(train_corpus.utterances)  # whole utterances, each once over all epochs
        assert eer_on(attacker, heldout) < 0.4
        heldout_calls = len(calls) - len(train_corpus.utterances)
        assert heldout_calls == len(heldout.utterances)
        # a second attacker of the run with the same SSL model trains and embeds on the stored states
        other = DastAttacker(
            params.model_copy(update={"fusion": "ssl"}), plugin_context(seed=2, work_dir=tmp_path / "b", options=run)
        )
        other.train(TrainingData([TrainingStage("original", train_corpus)]))
        other.represent_many([[u] for u in heldout.utterances])
        assert len(calls) == len(train_corpus.utterances) + len(heldout.utterances)
        stored = list((tmp_path / "cache" / "work" / "dast-ssl").rglob("*.npy"))
        assert len(stored) == len(train_corpus.utterances) + len(heldout.utterances)
    finally:
        del attacker._ssl.hidden_states


def test_no_ssl_states_in_ram(train_corpus, tiny_wavlm, tmp_path, tiny):
    """The states are read memory-mapped from their files: no in-memory cache of them is left."""
    params = DastAttacker.Params(
        **tiny, fusion="ssl", ssl={"kind": "wavlm", "path": str(tiny_wavlm)}, ssl_context="utterance"
    )
    attacker = DastAttacker(params, plugin_context(seed=1, work_dir=tmp_path))
    attacker._embedder = attacker._new_embedder()
    utterance = train_corpus.utterances[0]
    states = attacker.embedder.ssl_store.load(utterance, utterance.load(16000))
    assert isinstance(states, np.memmap) and states.dtype == np.float16
    assert not any(isinstance(v, dict | list) and v for v in vars(attacker.embedder.ssl_store).values())
    assert not hasattr(embedding, "SslCache") and not hasattr(embedding, "AudioCache")
    # once stored, finding an utterance's states reads no audio (a stage's planning stays metadata only)
    import soundfile

    real = soundfile.read
    soundfile.read = lambda *a, **k: (_ for _ in ()).throw(AssertionError("audio read"))
    try:
        assert attacker.embedder.ssl_store.ensure(utterance).is_file()
    finally:
        soundfile.read = real


def test_cached_states_embed_like_computed_ones(train_corpus, tiny_wavlm, tmp_path, tiny):
    """Embedding from the stored float16 states differs from the float32 computation by rounding only."""
    params = DastAttacker.Params(
        **tiny, fusion="mid", ssl={"kind": "wavlm", "path": str(tiny_wavlm)}, ssl_context="utterance"
    )
    attacker = DastAttacker(params, plugin_context(seed=1, work_dir=tmp_path))
    attacker._embedder = attacker._new_embedder()
    utterance = train_corpus.utterances[0]
    audio = utterance.load(16000)
    cached = attacker.embedder.embed_audio(audio, utterance)
    computed = attacker.embedder.embed_audio(audio)
    assert np.allclose(cached, computed, rtol=0.02, atol=0.02 * np.abs(computed).max())
