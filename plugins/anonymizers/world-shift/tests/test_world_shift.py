"""world-shift: F0 and formants move by the drawn ratios, voices follow keys, bounds, EER rises."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from vpeval.testing.dummies import make_corpus, seeded_voice
from vpeval.testing.scorers import mfcc_eers
from vpeval_world.vocoder import analyse, warp_frequency_axis
from vpeval_world_shift.anonymizer import ShiftVoice, WorldShift

voice = functools.partial(seeded_voice, seed=2)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus(tmp_path_factory.mktemp("ws"), speakers=6, utterances=4, sample_rate=16000, seconds=1.0)


def load(utt):
    audio, rate = sf.read(utt.path, dtype="float32")
    return audio, rate


def median_f0(audio, rate):
    """Median voiced F0 by harvest, a different estimator from the anonymizer's dio."""
    import pyworld

    f0, _ = pyworld.harvest(np.asarray(audio, np.float64), rate, f0_floor=50.0, f0_ceil=800.0)
    return float(np.median(f0[f0 > 0]))


@pytest.mark.parametrize("semitones", [-5.0, 4.0])
def test_median_f0_moves_by_the_requested_ratio(corpus, semitones):
    audio, rate = load(corpus.utterances[1])
    direction = "up" if semitones > 0 else "down"
    anon = WorldShift(
        WorldShift.Params(f0_semitones=(abs(semitones),) * 2, formant_ratio=(1.0, 1.0), direction=direction)
    )
    out = anon.anonymize(audio, rate, voice("u"))
    measured = median_f0(out, rate) / median_f0(audio, rate)
    assert measured == pytest.approx(2 ** (semitones / 12), rel=0.04), measured


def best_warp_ratio(source_sp, target_sp, rate):
    """The frequency ratio that best maps the source's log envelopes onto the target's, frame by frame, 200 Hz-4 kHz
    (the formant region; below it CheapTrick follows F0, above it the test vowels have only noise)."""
    freqs = np.linspace(0, rate / 2, source_sp.shape[1])
    band = (freqs > 200) & (freqs < 4000)
    candidates = np.linspace(0.7, 1.4, 141)
    errors = [
        np.mean((np.log(warp_frequency_axis(source_sp, r)) - np.log(target_sp))[:, band] ** 2) for r in candidates
    ]
    return float(candidates[int(np.argmin(errors))])


@pytest.mark.parametrize("ratio, direction", [(1.15, "up"), (1.15, "down")])
def test_envelope_moves_by_the_formant_ratio(corpus, ratio, direction):
    audio, rate = load(corpus.utterances[3])
    anon = WorldShift(
        WorldShift.Params(
            f0_semitones=(0.0, 0.0), formant_ratio=(ratio, ratio), direction=direction, f0_method="harvest"
        )
    )
    out = anon.anonymize(audio, rate, voice("u"))
    # harvest: dio finds almost no voiced frames in these synthetic vowels
    source, target = analyse(audio, rate, "harvest"), analyse(out, rate, "harvest")
    voiced = (source.f0 > 0) & (target.f0 > 0)
    expected = ratio if direction == "up" else 1 / ratio
    assert best_warp_ratio(source.sp[voiced], target.sp[voiced], rate) == pytest.approx(expected, abs=0.03)


def test_pseudo_voice_ranges_directions_and_levels():
    anon = WorldShift()
    voices = [anon.pseudo_voice(voice(f"utt{i}")) for i in range(200)]
    semitones = np.array([12 * np.log2(v.f0_ratio) for v in voices])
    ratios = np.array([v.formant_ratio for v in voices])
    assert ((np.abs(semitones) >= 3.0 - 1e-9) & (np.abs(semitones) <= 7.0 + 1e-9)).all()
    assert ((np.abs(np.log(ratios)) >= np.log(1.08) - 1e-9) & (np.abs(np.log(ratios)) <= np.log(1.2) + 1e-9)).all()
    assert 60 < (semitones > 0).sum() < 140  # both directions, about even
    assert (np.sign(semitones) == np.sign(np.log(ratios))).all()  # formants follow F0 by default
    independent = WorldShift(WorldShift.Params(formant_direction="independent"))
    pairs = [independent.pseudo_voice(voice(f"utt{i}")) for i in range(200)]
    assert any(np.sign(np.log(v.f0_ratio)) != np.sign(np.log(v.formant_ratio)) for v in pairs)
    # Speaker level: the same key always gives the same pseudo-voice; the draw depends only on voice.rng.
    assert len({anon.pseudo_voice(voice("spk001", "speaker")) for _ in range(3)}) == 1
    up = WorldShift(WorldShift.Params(direction="up"))
    assert all(up.pseudo_voice(voice(f"u{i}")).f0_ratio > 1 for i in range(20))


def test_output_keeps_length_level_and_follows_keys(corpus):
    audio, rate = load(corpus.utterances[0])
    anon = WorldShift()
    out = anon.anonymize(audio, rate, voice("a"))
    assert out.dtype == np.float32 and out.shape == audio.shape
    assert np.max(np.abs(out)) == pytest.approx(np.max(np.abs(audio)), rel=1e-5)
    np.testing.assert_array_equal(out, anon.anonymize(audio, rate, voice("a")))
    assert not np.allclose(out, anon.anonymize(audio, rate, voice("b")))
    for n in (1, 100, 1601):  # the core never hands an anonymizer empty audio (tests/test_anonymize_input.py)
        short = anon.anonymize(np.full(n, 0.05, np.float32), rate, voice("x"))
        assert short.shape == (n,) and np.isfinite(short).all()
    assert np.isfinite(anon.anonymize(audio, 8000, voice("a"))).all()  # any input rate


def test_bad_params():
    with pytest.raises(ValidationError, match="f0_semitones"):
        WorldShift.Params(f0_semitones=(7.0, 3.0))
    with pytest.raises(ValidationError, match="formant_ratio"):
        WorldShift.Params(formant_ratio=(0.8, 1.1))
    with pytest.raises(ValidationError):
        WorldShift.Params(f0_semitones=(float("nan"), 3.0))
    assert ShiftVoice(1.0, 1.0) == ShiftVoice(1.0, 1.0)


def test_world_shift_raises_eer_of_mfcc_scorer(tmp_path):
    # 3-s utterances: on 1-s ones the scorer's own O-O EER (about 23 %) leaves little room to measure.
    utterances = make_corpus(tmp_path, speakers=6, utterances=4, sample_rate=16000, seconds=3.0).utterances
    anon = WorldShift()
    vocoder_only = WorldShift(WorldShift.Params(f0_semitones=(0.0, 0.0), formant_ratio=(1.0, 1.0)))
    eer_oo, eer_oa = mfcc_eers(lambda audio, rate, key: anon.anonymize(audio, rate, voice(key)), utterances)
    _, eer_vocoder = mfcc_eers(lambda audio, rate, key: vocoder_only.anonymize(audio, rate, voice(key)), utterances)
    # Measured: O-O 0.167, WORLD resynthesis alone 0.194, default pseudo-voices 0.250.
    assert eer_oa > eer_oo + 0.06, (eer_oo, eer_oa)
    assert eer_oa > eer_vocoder + 0.04, (eer_vocoder, eer_oa)
