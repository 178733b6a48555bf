"""The audio (prosody) emotion indicator: features follow pitch, loudness and tilt; it finds acted styles."""

from __future__ import annotations

import csv

import numpy as np
import soundfile as sf

from vpeval.api import PluginContext, Voice
from vpeval.testing.dummies import speaker_voice, synthesize
from vpeval.types import Utterance
from vpeval_embedding_anonymizers.compensation import EmotionCompensation
from vpeval_embedding_anonymizers.prosody import prosodic_features

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


def test_features_follow_pitch_and_tilt():
    base = prosodic_features(styled(0, "neutral", 0))
    high = prosodic_features(styled(0, "happy", 0))
    low = prosodic_features(styled(0, "sad", 0))
    assert high[0] > base[0] > low[0]  # log-F0 mean
    assert high[6] > low[6]  # brighter spectrum, flatter tilt


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
        pool_vectors=pool_file, emotion_vectors=None, indicator="prosody", base_params={"epochs": 20},
        emotion_corpus={"use": "manifest", "params": {"path": str(manifest)}},
    )
    anon = EmotionCompensation(params, PluginContext(seed=0, work_dir=tmp_path / "work"))
    # The SVMs learn from embeddings; fit them on the synthetic vectors, the indicator on the audio.
    from vpeval_embedding_anonymizers.pool import read_npz

    anon.base = anon.base_anonymizer()
    anon.fit(read_npz(pool_file, "pool"))
    anon.prosody_model = anon.fit_prosody_indicator()
    anon._prepared = True
    voices = [Voice(u.id, "utterance", np.random.default_rng(0), utterance=u) for u in test]
    predicted = anon.source_emotions(np.zeros((len(test), 32)), voices)
    accuracy = np.mean([p == u.emotion for p, u in zip(predicted, test)])
    assert accuracy >= 0.5, (accuracy, predicted)  # chance: 0.25
