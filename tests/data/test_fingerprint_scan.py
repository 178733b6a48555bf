import os
import shutil
import time

import numpy as np
import pytest
import soundfile as sf

from vpeval.data import fingerprint as fp
from vpeval.data.fingerprint import corpus_fingerprint
from vpeval.data.scan import scan_corpus
from vpeval.errors import BadAudioError, DataError
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


def _hash_later(monkeypatch, seconds=60):
    """Pretend hashing happens `seconds` after the files were written, so index rows are trusted at once
    (rows of files changed just before hashing are re-checked; see test_racily_clean_files_are_rehashed)."""
    monkeypatch.setattr(fp, "_clock_ns", lambda: time.time_ns() + seconds * 10**9, raising=False)


def test_index_reuses_hashes_of_unchanged_files_and_notices_changed_ones(small_corpus, tmp_path, monkeypatch):
    _hash_later(monkeypatch)
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


def _same_size_noise(path):
    """Overwrite a wav's samples with noise of the same size and put its mtime back (as `touch -r` does)."""
    before = os.stat(path)
    data = bytearray(open(path, "rb").read())
    data[44:] = np.random.default_rng(7).integers(0, 256, len(data) - 44, dtype=np.uint8).tobytes()
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_same_size_rewrite_with_the_mtime_put_back_changes_the_fingerprint(small_corpus, tmp_path, monkeypatch):
    _hash_later(monkeypatch)
    cache = tmp_path / "cache"
    first = corpus_fingerprint(small_corpus, cache)
    _same_size_noise(small_corpus.utterances[3].path)
    assert corpus_fingerprint(small_corpus, cache) == corpus_fingerprint(small_corpus) != first


def test_racily_clean_files_are_rehashed(small_corpus, tmp_path, monkeypatch):
    # Files written a moment before hashing could change again within the same timestamp tick without
    # their ctime moving: their rows are not trusted until they are older than fp.RACY_NS.
    cache = tmp_path / "cache"
    corpus_fingerprint(small_corpus, cache)
    calls = []
    real_hash = fp.file_hash
    monkeypatch.setattr(fp, "file_hash", lambda p: calls.append(p) or real_hash(p))
    corpus_fingerprint(small_corpus, cache)
    assert len(calls) == len(small_corpus)


def _write(path, audio, rate=16000, subtype="PCM_16"):
    sf.write(path, np.asarray(audio, dtype=np.float32 if subtype == "FLOAT" else np.float64), rate, subtype=subtype)
    return str(path)


def _speech(seconds=0.5, rate=16000, peak=0.5):
    t = np.arange(int(seconds * rate)) / rate
    return peak * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t)) / 1.5


def _nan_inside():
    audio = _speech()
    audio[1000] = np.nan  # the old scan read the header and the last frame only
    return audio


def _inf_inside():
    audio = _speech()
    audio[3000] = np.inf
    return audio


DEGENERATE = {
    "one-sample": (lambda: _speech()[:1], "PCM_16", "shorter than the 0.1 s minimum"),
    "10ms": (lambda: _speech(0.01), "PCM_16", "lasts 0.01 s"),
    "zeros": (lambda: np.zeros(16000), "PCM_16", "every sample is zero"),
    "hiss": (lambda: np.random.default_rng(0).normal(0, 3e-5, 16000), "FLOAT", "silent (RMS level"),
    "loud-float": (lambda: _speech(peak=6.8), "FLOAT", "peak at 6.8, beyond full scale"),
    "nan": (_nan_inside, "FLOAT", "1 NaN or infinite samples"),
    "inf": (_inf_inside, "FLOAT", "1 NaN or infinite samples"),
}


@pytest.mark.parametrize("case", sorted(DEGENERATE))
def test_degenerate_audio_is_refused_or_skipped_never_scored(small_corpus, tmp_path, case):
    make, subtype, reason = DEGENERATE[case]
    bad = small_corpus.utterances[1]
    _write(bad.path, make(), subtype=subtype)
    with pytest.raises(BadAudioError) as err:
        scan_corpus(small_corpus, "fail")
    assert str(err.value).startswith(f"Audio file {bad.path} cannot be used: ") and reason in str(err.value)
    kept, skipped = scan_corpus(small_corpus, "skip", fingerprint_cache=tmp_path / "fp")
    assert [(s[0], reason in s[2]) for s in skipped] == [(bad.id, True)] and bad.id not in kept
    assert len(kept) == len(small_corpus) - 1


def test_quiet_speech_and_full_scale_pcm_are_kept(small_corpus, tmp_path):
    _write(small_corpus.utterances[0].path, _speech(peak=0.003))  # about -55 dBFS: quiet, not silent
    _write(small_corpus.utterances[1].path, np.sign(_speech()) * 1.0)  # PCM at full scale
    kept, skipped = scan_corpus(small_corpus, "fail")
    assert not skipped and len(kept) == len(small_corpus)


def test_a_manifest_sample_rate_that_contradicts_the_header_names_the_line(tmp_path):
    from vpeval.data.manifest import read_manifest

    _write(tmp_path / "a.wav", _speech())
    _write(tmp_path / "b.wav", _speech())
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,speaker,sample_rate\na.wav,x,16000\nb.wav,x,8000\n")
    for mode in ("fail", "skip"):  # a wrong label is not bad audio: skipping would hide it
        with pytest.raises(
            DataError,
            match=rf"Manifest {manifest} line 3 gives sample_rate 8000, but the header of .*b\.wav says 16000 Hz",
        ):
            scan_corpus(read_manifest(manifest), mode)


def test_ids_and_speakers_with_whitespace_from_any_source_are_refused_before_any_work(small_corpus):
    spaced = Corpus("plugin", [u.replace(speaker="spk 0") if i == 2 else u for i, u in enumerate(small_corpus)])
    with pytest.raises(DataError, match=r"Corpus plugin \(utterance 'spk000-u002'\) has the speaker 'spk 0'"):
        scan_corpus(spaced, "skip")
    empty = Corpus("plugin", [u.replace(id="") if i == 0 else u for i, u in enumerate(small_corpus)])
    with pytest.raises(DataError, match="has the utterance id '', which is empty"):
        scan_corpus(empty)


def test_scan_measures_are_kept_with_the_fingerprint_and_follow_the_content(small_corpus, tmp_path, monkeypatch):
    _hash_later(monkeypatch)
    from vpeval.data import scan

    calls = []
    real = scan.measure_audio
    monkeypatch.setattr(scan, "measure_audio", lambda path, channel=None: calls.append(path) or real(path, channel))
    cache = tmp_path / "fp"
    first, _ = scan_corpus(small_corpus, "fail", fingerprint_cache=cache)
    assert len(calls) == len(small_corpus)
    again, _ = scan_corpus(small_corpus, "fail", fingerprint_cache=cache)
    assert len(calls) == len(small_corpus) and [u.duration for u in again] == [u.duration for u in first]
    changed = small_corpus.utterances[0].path
    _write(changed, np.zeros(16000))
    with pytest.raises(BadAudioError, match="every sample is zero"):
        scan_corpus(small_corpus, "fail", fingerprint_cache=cache)
    assert calls[-1] == changed and len(calls) == len(small_corpus) + 1


def test_a_corpus_without_fingerprint_is_fingerprinted_after_its_scan_as_declared(small_corpus, tmp_path):
    # The runner may scan first: each file is then hashed right before it is decoded (read once from disk).
    declared = Corpus(small_corpus.name, [u.replace(duration=None, sample_rate=None) for u in small_corpus])
    scanned, skipped = scan_corpus(declared, "fail", fingerprint_cache=tmp_path / "fp")
    assert not skipped and all(u.duration for u in scanned)  # filled in from the files
    assert scanned.fingerprint == corpus_fingerprint(declared)  # of the declared values, not the filled-in ones
    given = Corpus(declared.name, declared.utterances, fingerprint="given")
    assert scan_corpus(given, "fail", fingerprint_cache=tmp_path / "fp")[0].fingerprint == "given"
    assert scan_corpus(declared, "fail")[0].fingerprint == ""  # no index: left to the caller, as before
