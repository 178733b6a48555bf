"""poolvc: length/rate/keys/levels, F0 moved to the pool speaker, EER of a simple scorer rises, choices."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vpeval.api import PluginContext, SpeakerEncoder
from vpeval.plugins import plugin_context
from vpeval.testing.contracts import AnonymizerContract
from vpeval.testing.dummies import make_corpus, seeded_voice, write_pool_manifest
from vpeval.testing.scorers import mfcc_eers, mfcc_mean
from vpeval_poolvc.anonymizer import PoolVC, convert_f0

POOL_MANIFEST = write_pool_manifest(Path(tempfile.mkdtemp(prefix="vpeval-poolvc-")), speakers=6)
POOL = {"use": "manifest", "params": {"path": POOL_MANIFEST}}


class TestPoolVCContract(AnonymizerContract):
    plugin_name = "poolvc"
    params = {"pool": POOL, "selection": "random"}


voice = functools.partial(seeded_voice, seed=1)


@pytest.fixture(scope="module")
def anonymizer(tmp_path_factory):
    anon = PoolVC(PoolVC.Params(pool=POOL, selection="random"), plugin_context(1, tmp_path_factory.mktemp("w")))
    anon.prepare()
    return anon


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("src"), speakers=6, utterances=3, sample_rate=16000, seconds=1.0)


def load(utt, rate=None):
    audio, file_rate = sf.read(utt.path, dtype="float32")
    if rate and rate != file_rate:
        from vpeval.audio import resample

        audio = resample(audio, file_rate, rate)
    return audio, rate or file_rate


@pytest.mark.parametrize("rate", [16000, 8000])
def test_length_rate_finite_changed_and_deterministic(anonymizer, corpus, rate):
    audio, rate = load(corpus.utterances[0], rate)
    out = anonymizer.anonymize(audio, rate, voice("u1"))
    assert out.dtype == np.float32 and out.shape == audio.shape and np.isfinite(out).all()
    assert not np.allclose(out, audio, atol=1e-2)
    np.testing.assert_array_equal(out, anonymizer.anonymize(audio, rate, voice("u1")))


def test_keys_and_levels_choose_speakers(anonymizer):
    chosen = {anonymizer.choose_speaker(None, 16000, voice(f"utt{i}")) for i in range(20)}
    assert len(chosen) > 2  # utterance level: new pool speakers
    per_speaker = {anonymizer.choose_speaker(None, 16000, voice("spk000", "speaker")) for _ in range(5)}
    assert len(per_speaker) == 1


def test_short_audio(anonymizer):
    for n in (10, 800):  # the core never hands an anonymizer stereo or empty audio (tests/test_anonymize_input.py)
        out = anonymizer.anonymize(np.full(n, 0.05, np.float32), 16000, voice("x"))
        assert out.shape == (n,) and np.isfinite(out).all()


def test_f0_moves_to_pool_speaker(anonymizer, corpus):
    import pyworld

    audio, rate = load(corpus.utterances[3])  # a male source (odd speaker index)
    for key in ("a", "b", "c", "d"):
        target = anonymizer._pool.target(anonymizer.choose_speaker(audio, rate, voice(key)), rate)
        out = anonymizer.anonymize(audio, rate, voice(key))
        f0_out, _ = pyworld.harvest(out.astype(np.float64), rate)
        median = np.median(f0_out[f0_out > 0])
        assert abs(np.log(median) - target.logf0_mean) < 0.15, (median, np.exp(target.logf0_mean))


def test_convert_f0_statistics():
    rng = np.random.default_rng(0)
    f0 = np.where(rng.random(500) < 0.7, np.exp(rng.normal(np.log(120), 0.1, 500)), 0.0)
    out = convert_f0(f0, np.log(220), 0.05)
    assert np.array_equal(out > 0, f0 > 0)
    assert abs(np.log(out[out > 0]).mean() - np.log(220)) < 1e-9
    assert abs(np.log(out[out > 0]).std() - 0.05) < 1e-9


def test_eer_of_mfcc_scorer_rises(anonymizer, corpus):
    eer_oo, eer_oa = mfcc_eers(lambda audio, rate, key: anonymizer.anonymize(audio, rate, voice(key)), corpus)
    assert eer_oa > eer_oo + 0.1, (eer_oo, eer_oa)


class MfccEncoder(SpeakerEncoder):
    """A test encoder: the mean MFCC vector."""

    name = "mfcc-mean"
    sample_rate = 16000
    dim = 19

    def embed(self, audio):
        return mfcc_mean(audio, 16000)


def encoder_context(work_dir: Path) -> PluginContext:
    from vpeval.plugins import get_plugin_manager

    def factory(kind, name, params):
        if kind == "encoder":
            return MfccEncoder(None, PluginContext(work_dir=work_dir / "enc"))
        cls = get_plugin_manager().get(kind, name)
        # Helpers reach their own helpers (an embedding anonymizer its encoder) through this factory too.
        return cls(cls.Params(**(params or {})), PluginContext(work_dir=work_dir / kind, plugin_factory=factory))

    return PluginContext(seed=1, work_dir=work_dir, plugin_factory=factory)


def test_farthest_random_picks_a_far_speaker(tmp_path, corpus):
    params = PoolVC.Params(pool=POOL, encoder={"use": "mfcc-mean"}, farthest=200)
    anon = PoolVC(params, encoder_context(tmp_path))
    anon.prepare()
    audio, rate = load(corpus.utterances[0])
    source = mfcc_mean(audio, rate)
    sims = anon._means @ source / np.linalg.norm(anon._means, axis=1) / np.linalg.norm(source)
    chosen = anon.choose_speaker(audio, rate, voice("u"))
    # 6 pool speakers -> the B1 fraction keeps the single farthest one.
    assert chosen == anon._pool.speakers[int(np.argmin(sims))]


def test_embedding_anonymizer_choice(tmp_path, corpus):
    params = PoolVC.Params(
        pool=POOL,
        encoder={"use": "mfcc-mean"},
        selection="selection",
        selection_params={"farthest": 4, "select": 2, "same_gender": False},
    )
    anon = PoolVC(params, encoder_context(tmp_path))
    audio, rate = load(corpus.utterances[0])
    out = anon.anonymize(audio, rate, voice("u"))
    assert out.shape == audio.shape and np.isfinite(out).all()
    v = voice("u")
    pseudo = anon._embedding_anonymizer.anonymize_embeddings(mfcc_mean(audio, rate)[None].astype(np.float64), [v])[0]
    sims = anon._means @ pseudo / np.linalg.norm(anon._means, axis=1)
    assert anon.choose_speaker(audio, rate, voice("u")) == anon._pool.speakers[int(np.argmax(sims))]
