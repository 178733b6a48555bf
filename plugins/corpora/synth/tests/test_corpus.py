"""The tiny preset: what it holds, how long it takes, and that the cache is reused."""

import json
import re
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from vpeval_synth.generate import EMOTIONS
from vpeval_synth.grammar import FAVOURITES, SLOTS, TEMPLATES, normalize


def test_tiny_preset_generates_quickly(tmp_path, make_source):
    start = time.perf_counter()
    corpus = make_source(tmp_path, preset="tiny", seed=3).load()
    assert time.perf_counter() - start < 30  # a few seconds alone; slack for a shared 2-core machine
    assert len(corpus.speakers) == 6 and len(corpus) == 36


def test_second_load_reuses_the_cache(tiny_source, tiny_corpus):
    folder = Path(tiny_corpus.info["folder"])
    stamp = (folder / "manifest.csv").stat().st_mtime_ns
    start = time.perf_counter()
    again = tiny_source.load()
    assert time.perf_counter() - start < 1.0
    assert (folder / "manifest.csv").stat().st_mtime_ns == stamp
    assert again.fingerprint == tiny_corpus.fingerprint
    assert [u.path for u in again] == [u.path for u in tiny_corpus]
    assert folder.parent == Path(tiny_source.context.work_dir)


def test_utterances_carry_labels_and_match_their_files(tiny_corpus):
    assert set(tiny_corpus.speaker_gender.values()) == {"f", "m"}
    for u in tiny_corpus:
        audio, rate = sf.read(u.path, dtype="float32")
        assert rate == u.sample_rate == 16000 and audio.ndim == 1
        assert abs(len(audio) / rate - u.duration) < 1e-3
        assert 2.0 <= u.duration <= 4.0  # the tiny preset's range
        assert 0 < np.abs(audio).max() < 1.0
        assert u.emotion in EMOTIONS
        assert u.session.startswith(u.speaker) and u.transcript.endswith(".")


def test_demo_length_range_is_respected(tmp_path, make_source):
    corpus = make_source(tmp_path, preset="demo", speakers=2, utterances=8).load()
    durations = np.array([u.duration for u in corpus])
    assert durations.min() >= 2.0 and durations.max() <= 8.0
    assert durations.max() - durations.min() > 2.0  # lengths really vary


def _grammar_pattern() -> re.Pattern:
    """A regular expression for every sentence the grammar can make (normalized text)."""
    alt = lambda options: "(?:" + "|".join(re.escape(o) for o in options) + ")"  # noqa: E731
    clauses = []
    for template in TEMPLATES:
        parts = re.split(r"\{(\w+)\}", template)
        clauses.append("".join(alt(SLOTS[p]) if i % 2 else re.escape(p) for i, p in enumerate(parts)))
    clause = "(?:" + "|".join(clauses) + ")"
    body = f"{clause}(?: {alt(SLOTS['connector'])} {clause})*"
    fav = alt(FAVOURITES)
    return re.compile(f"(?:{fav} )?(?:{alt(SLOTS['opener'])} )?{body}(?: {fav})?")


def test_transcripts_match_the_grammar(tiny_corpus):
    pattern = _grammar_pattern()
    for u in tiny_corpus:
        assert pattern.fullmatch(normalize(u.transcript)), u.transcript
    assert not pattern.fullmatch("the quick brown fox jumps over the lazy dog")


def test_card_describes_the_corpus(tiny_corpus):
    folder = Path(tiny_corpus.info["folder"])
    card = json.loads((folder / "card.json").read_text())
    assert card["speakers"] == 6 and card["utterances"] == 36
    assert card["genders"] == {"f": 3, "m": 3}
    assert sum(card["emotions"].values()) == 36
    assert abs(card["hours"] - sum(u.duration for u in tiny_corpus) / 3600) < 1e-3
    assert sorted(next(iter(card["engines"].values()))) == sorted(tiny_corpus.speakers)
    markdown = (folder / "card.md").read_text()
    assert "| speakers | 6" in markdown and "espeak-ng" in markdown


def test_a_damaged_cache_is_generated_again(tmp_path, make_source):
    source = make_source(tmp_path, preset="tiny", speakers=2, utterances=2)
    corpus = source.load()
    original = Path(corpus.utterances[1].path).read_bytes()
    Path(corpus.utterances[1].path).unlink()
    again = source.load()
    assert Path(again.utterances[1].path).read_bytes() == original
