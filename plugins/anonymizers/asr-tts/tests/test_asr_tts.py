"""asr-tts: the words survive (WER), the voice does not (GE2E, F0, MFCC EER); voices, timing, bounds."""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from vpeval.api import Transcript
from vpeval.plugins import plugin_context
from vpeval.testing.dummies import seeded_voice
from vpeval.testing.scorers import mfcc_eers
from vpeval_asr_tts.anonymizer import AsrTts, speech_span
from vpeval_asr_tts.voice import F0_BANDS, PseudoVoice

voice = functools.partial(seeded_voice, seed=6)


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    return plugin_context(seed=0, work_dir=tmp_path_factory.mktemp("asrtts"))


@pytest.fixture(scope="module")
def anonymizer(context):
    anon = AsrTts(AsrTts.Params(), context)
    anon.prepare()
    return anon


@pytest.fixture(scope="module")
def anonymized(anonymizer, espeak_corpus):
    out = {}
    for u in espeak_corpus:
        audio, rate = sf.read(u.path, dtype="float32")
        out[u.id] = anonymizer.anonymize(audio, rate, voice(u.id))
    return out


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def median_f0(audio, rate=16000):
    pyworld = pytest.importorskip("pyworld")
    x = np.asarray(audio, np.float64)
    f0, times = pyworld.dio(x, rate)
    f0 = pyworld.stonemask(x, f0, times, rate)
    return float(np.median(f0[f0 > 0]))


def test_words_survive(context, espeak_corpus, anonymized):
    import jiwer

    asr = context.get("asr", "whisper")
    refs = [" ".join(words(u.transcript)) for u in espeak_corpus]
    hyps = [" ".join(words(asr.transcribe(anonymized[u.id]).text)) for u in espeak_corpus]
    assert jiwer.wer(refs, hyps) < 0.25, list(zip(refs, hyps))


def test_output_level_length_and_timing(espeak_corpus, anonymized):
    for u in espeak_corpus:
        audio, rate = sf.read(u.path, dtype="float32")
        out = anonymized[u.id]
        assert out.dtype == np.float32 and out.shape == audio.shape and np.isfinite(out).all()
        assert np.max(np.abs(out)) == pytest.approx(np.max(np.abs(audio)), rel=1e-5)
        # The source's speech starts after 0.25 s of silence: the synthetic speech starts near there.
        onset = np.flatnonzero(np.abs(out) > 0.05 * np.max(np.abs(out)))[0] / rate
        assert 0.1 < onset < 0.5, (u.id, onset)


def test_voice_is_the_pseudo_voice_not_the_source(anonymizer, espeak_corpus, anonymized):
    for u in espeak_corpus:
        audio, _ = sf.read(u.path, dtype="float32")
        wanted = anonymizer.pseudo_voice(voice(u.id)).f0_median
        assert median_f0(anonymized[u.id]) == pytest.approx(wanted, rel=0.12), u.id


def test_ge2e_similarity_to_the_source_speaker_drops(context, espeak_corpus, anonymized):
    encoder = context.get("encoder", "ge2e")

    def unit(x):
        x = np.asarray(x, np.float64)
        return x / np.linalg.norm(x)

    source = {u.id: unit(encoder.embed(sf.read(u.path, dtype="float32")[0])) for u in espeak_corpus}
    anon = {k: unit(encoder.embed(v)) for k, v in anonymized.items()}
    same_source, to_anonymized = [], []
    for a in espeak_corpus:
        for b in espeak_corpus:
            if a.speaker == b.speaker and a.id != b.id:
                same_source.append(source[a.id] @ source[b.id])
                to_anonymized.append(source[a.id] @ anon[b.id])
    assert np.mean(to_anonymized) < np.mean(same_source) - 0.05, (np.mean(to_anonymized), np.mean(same_source))


def test_asr_tts_raises_eer_of_mfcc_scorer(anonymizer, espeak_corpus, anonymized):
    eer_oo, eer_oa = mfcc_eers(lambda audio, rate, key: anonymized[key], espeak_corpus)
    assert eer_oa > eer_oo + 0.15, (eer_oo, eer_oa)


def test_pseudo_voices_follow_keys_gender_and_ranges():
    anon = AsrTts()
    voices = [anon.pseudo_voice(voice(f"utt{i}")) for i in range(100)]
    assert 25 < sum(v.gender == "f" for v in voices) < 75
    for v in voices:
        _, _, low, high = F0_BANDS[v.gender]
        assert low <= v.f0_median <= high and 140.0 <= v.rate_wpm <= 175.0
    assert len({anon.pseudo_voice(voice("spk1", "speaker")) for _ in range(3)}) == 1
    male = AsrTts(AsrTts.Params(gender="m"))
    assert all(male.pseudo_voice(voice(f"u{i}")).gender == "m" for i in range(20))
    lines = voices[0].voice_lines()
    assert lines.startswith("gender ") and "pitch " in lines and "breath" not in lines


def test_silence_and_no_words_give_silence(anonymizer):
    quiet = anonymizer.anonymize(np.zeros(8000, np.float32), 16000, voice("q"))
    assert quiet.shape == (8000,) and not quiet.any()
    pseudo = anonymizer.pseudo_voice(voice("x"))
    assert not anonymizer.speak_transcript(Transcript("  ...  "), pseudo, np.full(1600, 0.5, np.float32), 16000).any()


def test_long_text_is_fitted_into_the_input(anonymizer):
    pseudo = anonymizer.pseudo_voice(voice("x"))
    text = "this sentence has far too many words to be spoken in the little time that is given to it here"
    source = np.full(16000, 0.4, np.float32)
    out = anonymizer.speak_transcript(Transcript(text, [("this", 0.1, 0.3)]), pseudo, source, 16000)
    assert out.shape == (16000,) and np.max(np.abs(out)) == pytest.approx(0.4, rel=1e-5)


def test_speech_span_from_loud_frames_and_word_times():
    audio = np.zeros(48000, np.float32)
    audio[8000:40000] = 0.3  # loud from 0.5 s to 2.5 s
    assert speech_span(audio, 16000, Transcript("a b", [("a", 0.0, 0.8), ("b", 0.9, 1.4)])) == pytest.approx((0.5, 2.0))
    assert speech_span(audio, 16000, Transcript("a b", [("a", 0.7, 0.8)])) == pytest.approx((0.7, 1.8))
    assert speech_span(np.zeros(32000, np.float32), 16000, Transcript("a")) == pytest.approx((0.0, 2.0))


def test_bad_params(anonymizer):
    with pytest.raises(ValidationError, match="rate_wpm"):
        AsrTts.Params(rate_wpm=(180.0, 150.0))
    with pytest.raises(ValidationError):
        AsrTts.Params(rate_wpm=(10.0, 150.0))
    with pytest.raises(ValidationError):
        AsrTts.Params(rate_wpm=(150.0, float("nan")))


def test_pseudo_voice_draw_is_reproducible():
    a = PseudoVoice.draw(np.random.default_rng(3), "random", (150.0, 150.0))
    b = PseudoVoice.draw(np.random.default_rng(3), "random", (150.0, 150.0))
    assert a == b and a.rate_wpm == 150.0
