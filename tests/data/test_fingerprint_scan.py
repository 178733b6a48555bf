import shutil

import numpy as np
import pytest
import soundfile as sf

from vpeval.data import fingerprint as fp
from vpeval.data.fingerprint import corpus_fingerprint
from vpeval.data.scan import scan_corpus
from vpeval.errors import BadAudioError
from vpeval.types import Corpus


def test_fingerprint_follows_labels_and_bytes_not_listing_order(small_corpus, tmp_path):
    base = corpus_fingerprint(small_corpus)
    assert corpus_fingerprint(Corpus("other", small_corpus.utterances[::-1])) == base
    relabelled = [u.replace(transcript="changed") if i == 0 else u for i, u in enumerate(small_corpus)]
    assert corpus_fingerprint(Corpus("x", relabelled)) != base
    path = small_corpus.utterances[1].path
    audio, rate = sf.read(path)
    sf.write(path, audio * 0.5, rate, subtype="PCM_16")
    assert corpus_fingerprint(small_corpus) != base


def test_index_reuses_hashes_of_unchanged_files_and_notices_changed_ones(small_corpus, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    first = corpus_fingerprint(small_corpus, cache)
    assert first == corpus_fingerprint(small_corpus)
    calls = []
    real_hash = fp.file_hash
    monkeypatch.setattr(fp, "file_hash", lambda p: calls.append(p) or real_hash(p))
    assert corpus_fingerprint(small_corpus, cache) == first and calls == []
    path = small_corpus.utterances[0].path
    sf.write(path, np.zeros(800, dtype=np.float32), 16000, subtype="PCM_16")
    assert corpus_fingerprint(small_corpus, cache) != first and len(calls) == 1


def test_scan_fails_on_the_first_bad_file_or_skips_and_lists_them(small_corpus, tmp_path):
    bad = small_corpus.utterances[2]
    with open(bad.path, "wb") as f:
        f.write(b"RIFF0000WAVEjunk")
    gone = small_corpus.utterances[4]
    shutil.move(gone.path, gone.path + ".moved")
    with pytest.raises(BadAudioError, match=bad.path):
        scan_corpus(small_corpus, "fail")
    kept, skipped = scan_corpus(small_corpus, "skip")
    assert [s[0] for s in skipped] == [bad.id, gone.id] and "does not exist" in skipped[1][2]
    assert len(kept) == len(small_corpus) - 2 and bad.id not in kept
    assert kept.info["skipped_audio"][0][0] == bad.id
    assert kept.fingerprint == ""  # stale otherwise; the caller refingerprints
    refingerprinted, _ = scan_corpus(small_corpus, "skip", fingerprint_cache=tmp_path / "fp")
    assert refingerprinted.fingerprint == corpus_fingerprint(kept)
    with pytest.raises(ValueError, match="on_bad_audio"):
        scan_corpus(small_corpus, "ignore")


def test_scan_fills_missing_rates_and_durations_from_headers(small_corpus):
    bare = Corpus("bare", [u.replace(sample_rate=None, duration=None) for u in small_corpus])
    checked, skipped = scan_corpus(bare)
    assert not skipped
    for u, original in zip(checked, small_corpus):
        assert u.sample_rate == 16000 and u.duration == pytest.approx(original.duration)
