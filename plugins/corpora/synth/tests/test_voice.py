"""Voices: F0 lands in the gender's band after resampling, and speakers differ in what they say."""

import numpy as np
import parselmouth
import soundfile as sf

from vpeval_espeak.driver import get_engine
from vpeval_synth.generate import make_speaker
from vpeval_synth.voice import F0_BANDS


def _median_f0(path: str) -> float:
    audio, rate = sf.read(path, dtype="float64")
    f0 = parselmouth.Sound(audio, rate).to_pitch(pitch_floor=60, pitch_ceiling=450).selected_array["frequency"]
    return float(np.median(f0[f0 > 0]))


def test_female_and_male_f0_in_their_bands(tiny_source, tiny_corpus):
    settings = tiny_source.settings()
    for index, speaker in enumerate(tiny_corpus.speakers):
        utterances = tiny_corpus.by_speaker()[speaker]
        f0 = np.median(
            [_median_f0(u.path) for u in utterances if u.emotion == "neutral"]
            or [_median_f0(u.path) for u in utterances]
        )
        gender = tiny_corpus.gender_of(speaker)
        _, _, low, high = F0_BANDS[gender]
        # A wrong resampling ratio would shift F0 by 22050/16000 or double it: the margin is smaller.
        assert 0.85 * low <= f0 <= 1.15 * high, (speaker, gender, f0)
        wanted = make_speaker(settings, index).voice.f0_median
        assert abs(np.log(f0 / wanted)) < np.log(1.2), (speaker, f0, wanted)
    female = [s for s in tiny_corpus.speakers if tiny_corpus.gender_of(s) == "f"]
    male = [s for s in tiny_corpus.speakers if tiny_corpus.gender_of(s) == "m"]
    f_mean = np.mean([_median_f0(tiny_corpus.by_speaker()[s][0].path) for s in female])
    m_mean = np.mean([_median_f0(tiny_corpus.by_speaker()[s][0].path) for s in male])
    assert f_mean > 1.4 * m_mean


def test_engine_runs_at_22050_and_keeps_duration_through_resampling(tmp_path):
    import soxr

    engine = get_engine()
    assert engine.sample_rate == 22050
    engine.set_voice("pitch 100 140")
    raw = engine.synthesize("the weather was lovely on monday")
    resampled = soxr.resample(raw.astype(np.float32), engine.sample_rate, 16000)
    assert abs(len(resampled) / 16000 - len(raw) / 22050) < 0.01
    assert 0.8 < len(raw) / 22050 < 4.0


def test_speakers_have_their_own_word_habits(tiny_source):
    settings = tiny_source.settings()
    a, b = make_speaker(settings, 0).idiolect, make_speaker(settings, 1).idiolect
    assert not np.allclose(a.slot_probs["place"], b.slot_probs["place"])
    # alpha 0.3 makes habits peaked: the favourite filler of a slot takes a large share.
    assert np.mean([p.max() for p in a.slot_probs.values()]) > 0.3
