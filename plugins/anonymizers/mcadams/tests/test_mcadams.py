"""McAdams: equals the per-frame reference, keeps length/rate, follows voice keys, raises EER."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import soundfile as sf

from vpeval.testing.dummies import make_corpus, seeded_voice
from vpeval.testing.scorers import mfcc_eers
from vpeval_mcadams.anonymizer import McAdams
from vpeval_mcadams.lpc import all_pole_rows, burg_lpc, fir_rows, poly_from_roots, poly_roots
from vpeval_mcadams.reference import mcadams_reference
from vpeval_mcadams.transform import mcadams

voice = functools.partial(seeded_voice, seed=3)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("mc"), speakers=6, utterances=4, sample_rate=16000, seconds=1.0)


def load(utt):
    audio, rate = sf.read(utt.path, dtype="float32")
    return audio, rate


def test_batched_lpc_pieces_match_numpy_and_scipy():
    from scipy.signal import lfilter

    rng = np.random.default_rng(0)
    frames = rng.normal(size=(6, 160))
    a = burg_lpc(frames, 12)
    roots = poly_roots(a)
    for i in range(6):
        np.testing.assert_allclose(np.sort_complex(roots[i]), np.sort_complex(np.roots(a[i])), atol=1e-8)
        np.testing.assert_allclose(poly_from_roots(roots)[i].real, np.poly(roots[i]).real, atol=1e-8)
        np.testing.assert_allclose(fir_rows(a, frames)[i], lfilter(a[i], [1.0], frames[i]), atol=1e-10)
        np.testing.assert_allclose(all_pole_rows(a, frames)[i], lfilter([1.0], a[i], frames[i]), atol=1e-8)
    # Burg keeps every pole inside the unit circle, so resynthesis cannot blow up.
    assert np.abs(roots).max() < 1.0


def test_burg_matches_librosa():
    librosa = pytest.importorskip("librosa")
    frames = np.random.default_rng(1).normal(size=(3, 320))
    a = burg_lpc(frames, 20)
    for i in range(3):
        np.testing.assert_allclose(a[i], librosa.lpc(frames[i], order=20), atol=1e-10)


def test_vectorised_equals_per_frame_reference(corpus):
    audio, rate = load(corpus.utterances[0])
    np.testing.assert_allclose(mcadams(audio, rate, 0.7), mcadams_reference(audio, rate, 0.7), atol=1e-8)


def test_alpha_one_is_near_identity(corpus):
    audio, rate = load(corpus.utterances[1])
    out = mcadams(audio, rate, alpha=1.0)
    # Analysis-synthesis with unchanged poles reconstructs the signal (edges excepted: half windows).
    inner = slice(rate // 50, -rate // 50)
    assert np.abs(out[inner] - audio[inner]).max() < 0.02 * np.abs(audio).max()


@pytest.mark.parametrize("rate", [8000, 16000, 22050])
def test_length_rate_finite_and_changed(corpus, rate):
    audio = np.random.default_rng(2).normal(0, 0.1, int(0.73 * rate)).astype(np.float32)
    anon = McAdams(McAdams.Params(output_level="input-peak"))
    out = anon.anonymize(audio, rate, voice("u1"))
    assert out.dtype == np.float32 and out.shape == audio.shape and np.isfinite(out).all()
    assert not np.allclose(out, audio, atol=1e-3)
    assert np.isclose(np.abs(out).max(), np.abs(audio).max(), rtol=1e-4)


def test_short_audio():
    anon = McAdams()
    for n in (1, 50, 321):  # the core never hands an anonymizer stereo or empty audio (tests/test_anonymize_input.py)
        out = anon.anonymize(np.full(n, 0.1, np.float32), 16000, voice("x"))
        assert out.shape == (n,) and np.isfinite(out).all()


def test_voice_keys_and_levels(corpus):
    audio, rate = load(corpus.utterances[2])
    anon = McAdams()  # VPC 2024 B2: alpha drawn from [0.5, 0.9] per voice
    a1 = anon.anonymize(audio, rate, voice("utt-a"))
    assert np.array_equal(a1, anon.anonymize(audio, rate, voice("utt-a")))
    assert not np.allclose(a1, anon.anonymize(audio, rate, voice("utt-b")))
    # Speaker level: the same key for all of a speaker's utterances gives one alpha.
    alphas = {anon.alpha_for(voice("spk001", "speaker")) for _ in range(3)}
    assert len(alphas) == 1 and 0.5 <= alphas.pop() <= 0.9
    fixed = McAdams(McAdams.Params(alpha=0.8))
    assert np.array_equal(fixed.anonymize(audio, rate, voice("k1")), fixed.anonymize(audio, rate, voice("k2")))


def test_bad_params():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="alpha_range"):  # the config layer adds file and line
        McAdams.Params(alpha_range=(0.9, 0.2))
    with pytest.raises(ValidationError, match="not both"):
        McAdams.Params(alpha=0.8, alpha_range=(0.6, 0.9))
    # alpha with alpha_range at its default is what the dump of {alpha: 0.8} holds: the run reads it back
    fixed = McAdams.Params(alpha=0.8)
    assert McAdams.Params.model_validate(fixed.model_dump(mode="json")) == fixed
    with pytest.raises(ValidationError, match="output_level"):
        McAdams.Params(output_level="loud")


def test_mcadams_raises_eer_of_mfcc_scorer(corpus):
    anon = McAdams(McAdams.Params(alpha_range=(0.5, 0.9)))
    eer_oo, eer_oa = mfcc_eers(lambda audio, rate, key: anon.anonymize(audio, rate, voice(key)), corpus)
    assert eer_oa > eer_oo + 0.1, (eer_oo, eer_oa)


def test_blocks_of_frames_give_the_same_bits_as_one_batch(corpus, monkeypatch):
    import vpeval_mcadams.transform as transform

    audio, rate = load(corpus.utterances[3])
    blocked = mcadams(audio, rate, 0.7)
    monkeypatch.setattr(transform, "BLOCK_FRAMES", 10**9)
    assert np.array_equal(blocked, mcadams(audio, rate, 0.7))
    monkeypatch.setattr(transform, "BLOCK_FRAMES", 7)
    assert np.array_equal(blocked, mcadams(audio, rate, 0.7))


def test_defaults_are_vpc2024_b2_alpha_uniform_per_voice():
    """VPC 2024's B2 draws alpha ~ U[0.5, 0.9] per utterance (anonymise_dir_mcadams_rand_seed.py)."""
    anon = McAdams()
    alphas = np.array([anon.alpha_for(voice(f"utt-{i}")) for i in range(400)])
    assert alphas.min() >= 0.5 and alphas.max() <= 0.9
    assert alphas.min() < 0.55 and alphas.max() > 0.85 and abs(alphas.mean() - 0.7) < 0.02
    assert len(set(alphas.tolist())) == len(alphas)
    # alpha comes from voice.rng: level speaker (one key per speaker) gives one alpha per speaker.
    assert anon.alpha_for(voice("spk1", "speaker")) == anon.alpha_for(voice("spk1", "speaker"))


def test_default_output_is_full_scale_like_vpc2024(corpus):
    from vpeval_mcadams.anonymizer import FULL_SCALE_PEAK

    audio, rate = load(corpus.utterances[0])
    quiet = 0.05 * audio / np.abs(audio).max()
    out = McAdams().anonymize(quiet, rate, voice("u"))
    # VPC 2024 writes int16 x / max|x| * (2**15 - 2); read back / 2**15.
    assert FULL_SCALE_PEAK == 32766 / 32768
    assert np.isclose(np.abs(out).max(), FULL_SCALE_PEAK, rtol=1e-6)


def test_older_settings_stay_available(corpus):
    from vpeval_mcadams.transform import mcadams as transform

    audio, rate = load(corpus.utterances[1])
    quiet = (0.05 * audio / np.abs(audio).max()).astype(np.float32)
    old = McAdams(McAdams.Params(alpha=0.8, output_level="input-peak"))
    out = old.anonymize(quiet, rate, voice("a"))
    assert np.array_equal(out, old.anonymize(quiet, rate, voice("b")))  # one alpha for everyone
    assert np.isclose(np.abs(out).max(), np.abs(quiet).max(), rtol=1e-5)
    raw = McAdams(McAdams.Params(alpha=0.8, output_level="unscaled")).anonymize(quiet, rate, voice("a"))
    np.testing.assert_allclose(raw, transform(quiet, rate, 0.8).astype(np.float32), rtol=1e-6)
