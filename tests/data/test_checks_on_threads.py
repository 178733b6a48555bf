"""A run hashes and measures lists of files on its threads (fingerprint.remembered_hashes(threads)): the same
fingerprints, measures, skips and errors as one file at a time, each file read for hashing and decoded for its
measures once, and a stage-cache entry's files known to the run after the entry's rename."""

from __future__ import annotations

import shutil

import pytest

from vpeval.data import fingerprint as fp
from vpeval.data import scan
from vpeval.data.fingerprint import corpus_fingerprint, remembered_hashes
from vpeval.data.scan import scan_corpus
from vpeval.errors import BadAudioError
from vpeval.run.cache import StageCache


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    return calls


@pytest.mark.parametrize("with_index", [False, True])
def test_hashes_on_threads_are_those_of_one_thread_and_each_file_is_read_once(
    small_corpus, tmp_path, monkeypatch, with_index
):
    alone = corpus_fingerprint(small_corpus)
    reads = _counting(monkeypatch, fp, "_hash_bytes")
    with remembered_hashes(threads=2):
        index = tmp_path / "index" if with_index else None
        assert corpus_fingerprint(small_corpus, index) == alone
        assert corpus_fingerprint(small_corpus, index) == alone
    assert sorted(map(str, reads)) == sorted(u.path for u in small_corpus.utterances)


def test_measures_on_threads_give_the_same_corpus_skips_and_errors(small_corpus, tmp_path, monkeypatch):
    bad = small_corpus.utterances[2]
    with open(bad.path, "wb") as f:
        f.write(b"RIFF0000WAVEjunk")
    gone = small_corpus.utterances[4]
    shutil.move(gone.path, gone.path + ".moved")
    one = scan_corpus(small_corpus, "skip", fingerprint_cache=tmp_path / "one")
    measured = _counting(monkeypatch, scan, "measure_audio")
    with remembered_hashes(threads=2):
        two = scan_corpus(small_corpus, "skip", fingerprint_cache=tmp_path / "two")
        assert (two[0].utterances, two[0].fingerprint, two[1]) == (one[0].utterances, one[0].fingerprint, one[1])
        # the bad file was measured ahead (it failed there) and again in order, which names it
        good = [u.path for u in small_corpus.utterances if u not in (bad, gone)]
        assert sorted(measured) == sorted(good + [bad.path, bad.path])
        with pytest.raises(BadAudioError, match=bad.path):
            scan_corpus(small_corpus, "fail")
        measured.clear()
        assert scan_corpus(small_corpus, "skip", fingerprint_cache=tmp_path / "two")[1] == one[1]
        assert measured == [bad.path, bad.path]  # the index remembers the good files' measures


def test_one_thread_measures_in_order_only(small_corpus, monkeypatch):
    measured = _counting(monkeypatch, scan, "measure_audio")
    with remembered_hashes(threads=1):
        scan_corpus(small_corpus, "fail")
    assert measured == [u.path for u in small_corpus.utterances]


def test_a_stage_entrys_files_are_remembered_after_its_rename(tmp_path, monkeypatch):
    cache = StageCache(tmp_path / "cache")
    with remembered_hashes(threads=2) as remembered:
        with cache.build("anonymize", "k" * 16) as folder:
            for name in ("a.wav", "b.wav"):
                (folder / name).write_bytes(name.encode() * 5000)
        reads = _counting(monkeypatch, fp, "_hash_bytes")
        final = cache.path("anonymize", "k" * 16)
        hashes = {name: fp.file_hash(final / name) for name in ("a.wav", "b.wav")}
    assert reads == [] and len(remembered) >= 2
    assert hashes == {name: fp._hash_bytes(final / name) for name in ("a.wav", "b.wav")}


def test_thread_results_hand_back_exceptions_in_place():
    def half(x):
        if x == 3:
            raise ValueError("three")
        return x / 2

    with remembered_hashes(threads=2):
        out = fp.thread_results(half, range(5))
    assert out[:3] == [0, 0.5, 1] and isinstance(out[3], ValueError) and out[4] == 2
