"""The audio (prosody) emotion indicator: its features follow pitch level and spread; it finds acted styles."""

from __future__ import annotations

import csv

import numpy as np
import soundfile as sf

from vpeval.api import Voice
from vpeval.plugins import plugin_context
from vpeval.testing.dummies import speaker_voice, synthesize
from vpeval.types import Utterance
from vpeval_embedding_anonymizers.compensation import EmotionCompensation
from vpeval_prosody import FEATURE_NAMES, prosodic_features

# Emotion-like styles: pitch factor and spectral tilt change (the synth corpus varies the same cues).
STYLES = {"neutral": (1.0, 0.0), "happy": (1.5, 0.03), "sad": (0.7, -0.1), "angry": (1.2, 0.06)}


def styled(speaker: int, emotion: str, seed: int) -> np.ndarray:
    voice = dict(speaker_voice(speaker, seed=5))
    pitch, tilt = STYLES[emotion]
    voice["f0"] *= pitch
    voice["tilt"] = min(0.99, voice["tilt"] + tilt)
    return synthesize(voice, 1.0, 16000, np.random.default_rng([seed, speaker]))


def write_corpus(folder, speakers, per_emotion=2):
    utts = []
    for s in speakers:
        for e in STYLES:
            for k in range(per_emotion):
                path = folder / f"s{s}-{e}-{k}.wav"
                sf.write(path, styled(s, e, k), 16000)
                utts.append(Utterance(id=path.stem, speaker=f"s{s}", path=str(path), emotion=e, sample_rate=16000))
    return utts


def test_features_follow_pitch_level():
    base = prosodic_features(styled(0, "neutral", 0))
    high = prosodic_features(styled(0, "happy", 0))
    low = prosodic_features(styled(0, "sad", 0))
    assert len(base) == len(FEATURE_NAMES) and np.isfinite(base).all()
    assert high[0] > base[0] > low[0]  # median F0 in semitones


def harmonic_tone(f0_start: float, f0_end: float, seconds: float = 2.0, rate: int = 16000) -> np.ndarray:
    f0 = np.geomspace(f0_start, f0_end, int(seconds * rate))
    phase = 2 * np.pi * np.cumsum(f0) / rate
    return 0.3 * sum(np.sin(k * phase) / k for k in range(1, 10))


def test_pitch_spread_separates_a_monotone_from_a_glide():
    spread = FEATURE_NAMES.index("f0_p90_p10_st")
    flat, glide = prosodic_features(harmonic_tone(150, 150)), prosodic_features(harmonic_tone(120, 240))
    assert flat[spread] < 0.2 and 8.0 < glide[spread] < 12.0  # the glide spans one octave = 12 semitones
    assert abs(flat[0] - 12 * np.log2(150 / 27.5)) < 0.2


def test_prosody_indicator_recognises_styles_of_unseen_speakers(tmp_path, pool_file):
    # Female-like speakers only, so speaker pitch varies less than the styles do (as within a gender).
    train = write_corpus(tmp_path, speakers=range(0, 12, 2))
    manifest = tmp_path / "emotions.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker", "emotion"])
        for u in train:
            writer.writerow([u.path, u.speaker, u.emotion])
    test = write_corpus(tmp_path, speakers=range(12, 20, 2), per_emotion=1)
    params = EmotionCompensation.Params(
        pool_vectors=pool_file,
        emotion_vectors=None,
        indicator="prosody",
        base_params={"epochs": 20},
        emotion_corpus={"use": "manifest", "params": {"path": str(manifest)}},
    )
    anon = EmotionCompensation(params, plugin_context(seed=0, work_dir=tmp_path / "work"))
    # The SVMs learn from embeddings; fit them on the synthetic vectors, the indicator on the audio.
    from vpeval.speakers import read_npz

    anon.base = anon.base_anonymizer()
    anon.fit(read_npz(pool_file, "pool"))
    anon.prosody_model = anon.fit_prosody_indicator()
    anon._prepared = True
    voices = [Voice(u.id, "utterance", np.random.default_rng(0), utterance=u) for u in test]
    predicted = anon.source_emotions(np.zeros((len(test), 32)), voices)
    accuracy = np.mean([p == u.emotion for p, u in zip(predicted, test)])
    assert accuracy >= 0.5, (accuracy, predicted)  # chance: 0.25
