"""Emotion-like styles: style_strength scales them, and the emotion preset's styles are audible."""

import numpy as np
import soundfile as sf

from vpeval_synth.styles import STYLES


def test_strength_one_is_the_style_itself_and_two_doubles_the_offsets():
    for style in STYLES.values():
        assert style.scaled(1.0) is style
    sad, happy = STYLES["sad"].scaled(2.0), STYLES["happy"].scaled(2.0)
    assert sad.pitch == 2 * STYLES["sad"].pitch and sad.rate == 1.0 + 2 * (STYLES["sad"].rate - 1.0)
    assert happy.pitch_range == 50 + 2 * (STYLES["happy"].pitch_range - 50)
    assert STYLES["neutral"].scaled(3.0) == STYLES["neutral"]


def test_default_strength_keeps_the_corpus_identity(tmp_path, make_source):
    # Corpora made before style_strength existed keep their fingerprint (and so every cached result).
    assert (
        make_source(tmp_path, preset="tiny").fingerprint()
        == make_source(tmp_path, preset="tiny", style_strength=1.0).fingerprint()
    )
    assert (
        make_source(tmp_path, preset="tiny").fingerprint()
        != make_source(tmp_path, preset="tiny", style_strength=2.0).fingerprint()
    )


def pitch_spread(path: str) -> float:
    """Interquartile range of F0 in semitones (Praat, a speaker-adapted second pass)."""
    import parselmouth

    audio, rate = sf.read(path)
    sound = parselmouth.Sound(audio, sampling_frequency=float(rate))
    first = sound.to_pitch(pitch_floor=60, pitch_ceiling=600).selected_array["frequency"]
    q1, q3 = np.percentile(first[first > 0], [25, 75])
    f0 = sound.to_pitch(pitch_floor=0.75 * q1, pitch_ceiling=1.5 * q3).selected_array["frequency"]
    semitones = 12 * np.log2(f0[f0 > 0])
    return float(np.subtract(*np.percentile(semitones, [75, 25])))


def test_emotion_preset_balances_emotions_and_spreads_their_pitch(tmp_path, make_source):
    corpus = make_source(tmp_path, preset="emotion", speakers=4, utterances=12, max_seconds=4.0).load()
    emotions = [u.emotion for u in corpus]
    counts = {e: emotions.count(e) for e in STYLES}
    assert min(counts.values()) >= 6, counts  # 0.75 emotional: about 12 of each of the 4
    spread = {e: np.median([pitch_spread(u.path) for u in corpus if u.emotion == e]) for e in STYLES}
    # Sad is spoken on a monotone (range 0); happy and angry on a wider range than neutral.
    assert spread["sad"] < 0.3 < spread["neutral"] < min(spread["happy"], spread["angry"]), spread


def test_extreme_styles_still_fit_the_length_limits(tmp_path, make_source):
    # Sad at strength 3 speaks at half the speaker's rate; the generator adjusts the rate to fit 2-4 s.
    corpus = make_source(
        tmp_path, preset="tiny", style_strength=3.0, emotion_share=1.0, speakers=6, utterances=10, seed=1
    ).load()
    assert len(corpus) == 60 and all(2.0 <= u.duration <= 4.0 for u in corpus)
