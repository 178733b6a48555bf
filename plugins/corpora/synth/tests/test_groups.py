"""Speaker groups (speaker_groups: true): an age and an accent group per speaker that shape the voice,
declared as speaker attributes; corpora without them keep every byte."""

import csv
from collections import Counter
from pathlib import Path

import numpy as np
import parselmouth
import soundfile as sf

from vpeval_synth.generate import make_speaker, speaker_group
from vpeval_synth.voice import ACCENTS, AGE_EDGES, AGE_RANGES


def _median_f0(paths) -> float:
    values = []
    for path in paths:
        audio, rate = sf.read(path, dtype="float64")
        f0 = parselmouth.Sound(audio, rate).to_pitch(pitch_floor=60, pitch_ceiling=450).selected_array["frequency"]
        values.append(np.median(f0[f0 > 0]))
    return float(np.median(values))


def test_without_groups_nothing_changes(tmp_path, make_source):
    plain = make_source(tmp_path, preset="tiny")
    assert plain.fingerprint() == make_source(tmp_path, preset="tiny", speaker_groups=False).fingerprint()
    assert plain.fingerprint() != make_source(tmp_path, preset="tiny", speaker_groups=True).fingerprint()
    assert plain.speaker_attributes() == {}


def test_groups_are_balanced_with_gender_and_ages_fall_in_the_declared_bands(tmp_path, make_source):
    source = make_source(tmp_path, preset="demo", speakers=36, speaker_groups=True)
    attributes = source.speaker_attributes()  # no audio generated for this
    assert not list(Path(tmp_path).glob("synth-*"))
    settings = source.settings()
    combos = Counter()
    for index in range(36):
        speaker = make_speaker(settings, index)
        age, accent = int(attributes["age"][speaker.id]), attributes["accent"][speaker.id]
        assert attributes["gender"][speaker.id] == speaker.gender
        assert (age, accent) == (speaker.age, speaker.accent) == speaker_group(settings, index)
        band = int(np.searchsorted(AGE_EDGES, age, side="right"))
        assert AGE_RANGES[band][0] <= age <= AGE_RANGES[band][1]
        combos[(speaker.gender, band, accent)] += 1
    assert len(combos) == 2 * len(AGE_RANGES) * len(ACCENTS) and set(combos.values()) == {2}


def test_age_and_accent_shape_the_voice_drawn_without_them(tmp_path, make_source):
    plain = make_source(tmp_path, preset="demo", speakers=36).settings()
    grouped = make_source(tmp_path, preset="demo", speakers=36, speaker_groups=True).settings()
    for index in range(36):
        base, shaped = make_speaker(plain, index), make_speaker(grouped, index)
        assert base.idiolect.slot_probs.keys() == shaped.idiolect.slot_probs.keys()
        assert shaped.voice == base.voice.shaped(shaped.age, shaped.accent)  # the same draws, then shaped
        older = shaped.age >= 50
        if shaped.gender == "f":
            assert (shaped.voice.f0_median < base.voice.f0_median) == (shaped.age > 40)
        elif older:
            assert shaped.voice.f0_median >= base.voice.f0_median
        df1, df2, _, rate, _ = ACCENTS[shaped.accent]
        assert (shaped.voice.rate_wpm < base.voice.rate_wpm) == (rate * (1 - 0.004 * (shaped.age - 40)) < 1)
        if shaped.accent != "west":  # vowel quality: F1 and F2 move the accent's way, beyond the age shift
            moved = [shaped.voice.formants[k][0] - base.voice.formants[k][0] for k in (1, 2)]
            tract = -0.08 * (shaped.age - 40)
            assert np.sign(moved[0] - tract) == np.sign(df1) and np.sign(moved[1] - tract) == np.sign(df2)


def test_generated_groups_are_in_the_manifest_and_in_the_audio(tmp_path, make_source):
    source = make_source(tmp_path / "g", preset="tiny", utterances=3, speaker_groups=True)
    corpus = source.load()
    with open(Path(corpus.info["folder"]) / "manifest.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    declared = source.speaker_attributes()
    assert {(r["speaker"], r["age"], r["accent"]) for r in rows} == {
        (s, declared["age"][s], declared["accent"][s]) for s in corpus.speakers
    }
    plain = make_source(tmp_path / "p", preset="tiny", utterances=3).load()
    # speaker s0004: a woman in the oldest band (50-75): her generated speech is lower than the same voice's
    # without an age; a young woman's (s0000, 20-29) higher.
    for speaker, lower in (("s0004", True), ("s0000", False)):
        grouped_f0 = _median_f0([u.path for u in corpus.by_speaker()[speaker]])
        plain_f0 = _median_f0([u.path for u in plain.by_speaker()[speaker]])
        assert (grouped_f0 < plain_f0) == lower, (speaker, grouped_f0, plain_f0)
