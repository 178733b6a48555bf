"""The content cache finds each audio file's hash through the run's fingerprint index: a file the data stage
hashed is only stat'ed at every extractor's look-up, not read whole again (benchmarks/scale.py), and a
rewritten file is hashed again; the cache file names are those of the file hash, as before."""

from __future__ import annotations

import builtins
import time

import numpy as np
import soundfile as sf

from vpeval.api import PluginContext
from vpeval.content_cache import ContentCache, cached_batches, cached_map
from vpeval.data import fingerprint
from vpeval.data.fingerprint import corpus_fingerprint, file_hash
from vpeval.types import Corpus, Utterance


def _utterances(folder, count=3):
    rng = np.random.default_rng(0)
    utts = []
    for i in range(count):
        path = folder / f"u{i}.wav"
        sf.write(path, rng.normal(0, 0.1, 1600).astype(np.float32), 16000)
        utts.append(Utterance(f"u{i}", "spk", str(path)))
    return utts


def _reads(monkeypatch) -> list[str]:
    """Wav files Python opens from here on (hashing opens them; the extractors here read with libsndfile)."""
    read: list[str] = []
    real_open = builtins.open

    def counting(file, *args, **kwargs):
        if str(file).endswith(".wav"):
            read.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting)
    return read


def _not_racy(monkeypatch):
    # Hashes taken within RACY_NS of a file's ctime are not trusted; these files were written just now.
    monkeypatch.setattr(fingerprint, "_clock_ns", lambda: time.time_ns() + 2 * fingerprint.RACY_NS)


def test_a_fingerprinted_corpus_is_not_read_again_by_the_cache(tmp_path, monkeypatch):
    utts = _utterances(tmp_path)
    cache_root = tmp_path / "cache"
    _not_racy(monkeypatch)
    corpus_fingerprint(Corpus("c", utts), cache_root / "fingerprints")  # the runner's data stage
    read = _reads(monkeypatch)
    context = PluginContext(work_dir=tmp_path / "work", options={"cache_root": cache_root})
    first = cached_map(context, utts, "energy", lambda u: np.array([float(np.square(sf.read(u.path)[0]).sum())]))
    batched = cached_batches(context, utts, "energy", lambda us: [np.zeros(1) for _ in us], batch_size=2)
    assert read == []  # stat and index look-ups only
    assert all(np.array_equal(a, b) for a, b in zip(first, batched))  # the second call read the first's results
    # Same file names as keyed by the file hash itself: caches written before stay valid.
    for u in utts:
        assert ContentCache(cache_root / "content", "energy").path(u, file_hash(u.path)).is_file()
        assert ContentCache(cache_root / "content", "energy").path(u) == ContentCache(
            cache_root / "content", "energy"
        ).path(u, file_hash(u.path))


def test_files_new_to_the_index_are_hashed_once_and_a_rewritten_file_again(tmp_path, monkeypatch):
    utts = _utterances(tmp_path)
    _not_racy(monkeypatch)
    read = _reads(monkeypatch)
    context = PluginContext(work_dir=tmp_path / "work", options={"cache_root": tmp_path / "cache"})
    calls: list[str] = []

    def energy(u):
        calls.append(u.id)
        return np.array([float(np.square(sf.read(u.path)[0]).sum())])

    first = cached_map(context, utts, "energy", energy)
    assert sorted(read) == sorted(u.path for u in utts) and calls == ["u0", "u1", "u2"]
    cached_map(context, utts, "energy", energy)
    assert len(read) == 3 and len(calls) == 3
    sf.write(utts[1].path, 2 * sf.read(utts[1].path, dtype="float32")[0], 16000)
    changed = cached_map(context, utts, "energy", energy)
    assert read[3:] == [utts[1].path] and calls[3:] == ["u1"]
    assert np.isclose(changed[1][0], 4 * first[1][0], rtol=1e-3)
