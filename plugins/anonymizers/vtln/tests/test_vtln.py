"""vtln: warps are exact and monotone; F0 and spectral centroid move as the warp says; keys; EER rises."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from vpeval.api import PluginContext, Voice
from vpeval.testing.dummies import make_corpus, seeded_voice
from vpeval.testing.scorers import mfcc_eers
from vpeval_vtln.anonymizer import VTLN, Warp
from vpeval_vtln.warping import bilinear, piecewise_linear, piecewise_linear_inverse

GRID = np.linspace(0.0, np.pi, 513)


voice = functools.partial(seeded_voice, seed=4)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("vtln"), speakers=6, utterances=4, sample_rate=16000, seconds=1.0)


def load(utt):
    audio, rate = sf.read(utt.path, dtype="float32")
    return audio, rate


def median_f0(audio, rate):
    pyworld = pytest.importorskip("pyworld")
    f0, _ = pyworld.harvest(np.asarray(audio, np.float64), rate, f0_floor=50.0, f0_ceil=800.0)
    return float(np.median(f0[f0 > 0]))


def centroid(audio, rate, top=4000.0):
    """Power-weighted mean frequency below `top` Hz of the whole utterance."""
    power = np.abs(np.fft.rfft(audio * np.hanning(len(audio)))) ** 2
    freqs = np.fft.rfftfreq(len(audio), 1 / rate)
    band = freqs < top
    return float((power[band] * freqs[band]).sum() / power[band].sum())


@pytest.mark.parametrize("alpha", [-0.2, 0.1, 0.3])
def test_bilinear_warp_is_monotone_with_exact_inverse_and_fixed_ends(alpha):
    warped = bilinear(GRID, alpha)
    assert np.all(np.diff(warped) > 0)
    assert warped[0] == pytest.approx(0.0, abs=1e-12) and warped[-1] == pytest.approx(np.pi)
    np.testing.assert_allclose(bilinear(warped, -alpha), GRID, atol=1e-12)
    assert np.sign(warped[100] - GRID[100]) == np.sign(alpha)  # alpha > 0 moves frequencies up


@pytest.mark.parametrize("factor", [0.8, 1.25])
def test_piecewise_linear_warp_and_its_inverse(factor):
    warped = piecewise_linear(GRID, factor, 0.8)
    assert np.all(np.diff(warped) > 0) and warped[-1] == pytest.approx(np.pi)
    assert warped[50] == pytest.approx(factor * GRID[50])  # the low band scales by the slope
    np.testing.assert_allclose(piecewise_linear_inverse(warped, factor, 0.8), GRID, atol=1e-12)


@pytest.mark.parametrize("direction", ["up", "down"])
def test_spectrum_warp_moves_f0_by_the_low_frequency_slope(corpus, direction):
    audio, rate = load(corpus.utterances[1])
    anon = VTLN(VTLN.Params(alpha=(0.1, 0.1), direction=direction))
    out = anon.anonymize(audio, rate, voice("u"))
    alpha = 0.1 if direction == "up" else -0.1
    expected = (1 + alpha) / (1 - alpha)  # the bilinear warp's slope at 0 Hz
    assert median_f0(out, rate) / median_f0(audio, rate) == pytest.approx(expected, rel=0.04)
    assert (centroid(out, rate) > centroid(audio, rate)) == (direction == "up")


@pytest.mark.parametrize("warping", ["bilinear", "piecewise-linear"])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_envelope_warp_keeps_f0_and_moves_the_spectral_centroid(corpus, warping, direction):
    audio, rate = load(corpus.utterances[5])
    anon = VTLN(
        VTLN.Params(target="envelope", warping=warping, alpha=(0.12, 0.12), factor=(1.2, 1.2), direction=direction)
    )
    out = anon.anonymize(audio, rate, voice("u"))
    assert median_f0(out, rate) == pytest.approx(median_f0(audio, rate), rel=0.02)
    shift = centroid(out, rate) / centroid(audio, rate)
    assert shift > 1.03 if direction == "up" else shift < 1 / 1.03, shift


def test_pseudo_voice_ranges_and_levels():
    anon = VTLN()
    alphas = np.array([anon.pseudo_voice(voice(f"utt{i}")).value for i in range(200)])
    assert ((np.abs(alphas) >= 0.06) & (np.abs(alphas) <= 0.14)).all()
    assert 60 < (alphas > 0).sum() < 140
    assert len({anon.pseudo_voice(voice("spk001", "speaker")) for _ in range(3)}) == 1
    pw = VTLN(VTLN.Params(warping="piecewise-linear", direction="down"))
    warps = [pw.pseudo_voice(voice(f"u{i}")) for i in range(50)]
    assert all(w.kind == "piecewise-linear" and 1 / 1.2 - 1e-9 <= w.value <= 1 / 1.08 + 1e-9 for w in warps)
    assert Warp("bilinear", 0.1).source_frequencies(GRID) == pytest.approx(bilinear(GRID, -0.1))


def test_output_keeps_length_level_and_follows_keys(corpus):
    audio, rate = load(corpus.utterances[0])
    anon = VTLN()
    out = anon.anonymize(audio, rate, voice("a"))
    assert out.dtype == np.float32 and out.shape == audio.shape
    assert np.max(np.abs(out)) == pytest.approx(np.max(np.abs(audio)), rel=1e-5)
    np.testing.assert_array_equal(out, anon.anonymize(audio, rate, voice("a")))
    assert not np.allclose(out, anon.anonymize(audio, rate, voice("b")))
    for n in (1, 100, 1601):  # the core never hands an anonymizer empty audio (tests/test_anonymize_input.py)
        short = anon.anonymize(np.full(n, 0.05, np.float32), rate, voice("x"))
        assert short.shape == (n,) and np.isfinite(short).all()
    assert np.isfinite(anon.anonymize(audio, 8000, voice("a"))).all()


def test_bad_params():
    with pytest.raises(ValidationError, match="alpha"):
        VTLN.Params(alpha=(0.2, 0.1))
    with pytest.raises(ValidationError):
        VTLN.Params(alpha=(0.1, 0.9))  # beyond the bound
    with pytest.raises(ValidationError, match="hop_ms"):
        VTLN.Params(win_ms=20.0, hop_ms=15.0)
    with pytest.raises(ValidationError):
        VTLN.Params(factor=(1.1, float("inf")))


def test_vtln_raises_eer_of_mfcc_scorer(corpus):
    # Three seeds of pseudo-voices: on 24 utterances one seed's draw moves the EER by several points.
    anon = VTLN()
    rises = []
    for seed in (2, 4, 7):

        def anonymize(audio, rate, key, seed=seed):
            return anon.anonymize(audio, rate, Voice(key, "utterance", PluginContext(seed=seed).rng("voice", key)))

        eer_oo, eer_oa = mfcc_eers(anonymize, corpus)
        rises.append(eer_oa - eer_oo)
    # Measured: +0.13, +0.065, +0.062 (O-O 0.228).
    assert min(rises) > 0.03 and np.mean(rises) > 0.06, rises
