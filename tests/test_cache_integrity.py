"""Cache entries check themselves; keys hold every declared value; files replaced mid-run are refused.

Each damage test runs a tiny experiment twice on one cache, damages the cache in between, and checks
that the second run recomputes the damaged entry, says so in one log line, and reports the true values.
"""

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from vpeval.config import load_experiment_text
from vpeval.content_cache import cached_map
from vpeval.data import fingerprint as fp
from vpeval.data.fingerprint import corpus_fingerprint, file_hash
from vpeval.errors import DataError, UserError
from vpeval.run import cache as cache_module
from vpeval.run.cache import ENTRY_MANIFEST, StageCache
from vpeval.run.runner import Runner, default_cache_root
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus

SMALL = """\
name: integrity
seed: 3
data:
  corpus: {corpus}
  target_trials_per_speaker: 2
  nontarget_trials_per_speaker: 2
anonymizers: [fake-shift]
attackers: [fake-spectrum]
metrics: [fake-eer]
"""
FAKE_CORPUS = "{use: fake-corpus, params: {speakers: 8, utterances: 4}}"


def run(tmp_path: Path, corpus: str = FAKE_CORPUS):
    exp = load_experiment_text(SMALL.format(corpus=corpus), "exp.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / "run", quiet=True).run()


def values(result):
    return {(r["anonymizer"], r["attacker"], r["protocol"], r["n"], r["gender"]): r["value"] for r in result.rows}


def entry_file(tmp_path: Path, stage: str, name: str) -> Path:
    """A file `name` in the first entry of `stage` (entries sorted by key, so the same one each time)."""
    found = sorted(p for p in (tmp_path / "cache" / stage).glob(f"*/*/{name}") if p.parent.name.isalnum())
    assert found, f"no {name} in any {stage} entry"
    return found[0]


def log_text(tmp_path: Path) -> str:
    return (tmp_path / "run" / "run.log").read_text()


def same_size_edit(path: Path, old: bytes, new: bytes) -> None:
    """Replace `old` with `new` (same length) and put the mtime back, as `touch -r` would."""
    before = os.stat(path)
    data = path.read_bytes()
    assert old in data and len(old) == len(new)
    path.write_bytes(data.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


# -- damaged entries -------------------------------------------------------------------------------------


def test_truncated_scores_are_recomputed(tmp_path, fake_plugins):
    reference = values(run(tmp_path))
    scores = entry_file(tmp_path, "score", "scores.npz")
    scores.write_bytes(scores.read_bytes()[: scores.stat().st_size // 2])
    again = run(tmp_path)
    assert values(again) == reference
    assert again.executed.get("score") and "anonymize" not in again.executed and "train" not in again.executed
    assert "was damaged (file scores.npz: size differs" in log_text(tmp_path)
    assert "recomputing it" in log_text(tmp_path) and "Traceback" not in log_text(tmp_path)


def test_an_edited_metric_value_is_never_reported(tmp_path, fake_plugins):
    reference = values(run(tmp_path))
    rows = entry_file(tmp_path, "metrics", "results.json")
    value = json.loads(rows.read_text())[0]["value"]
    text = json.dumps(value)
    edited = ("9" if text[0] != "9" else "8") + text[1:]  # same length: only the hash can tell
    same_size_edit(rows, f'"value": {text}'.encode(), f'"value": {edited}'.encode())
    again = run(tmp_path)
    assert values(again) == reference and float(edited) not in values(again).values()
    assert again.executed.get("metrics") == [again.executed["metrics"][0]], "only the edited entry is recomputed"
    assert "was damaged (file results.json: hash differs)" in log_text(tmp_path)


def test_an_emptied_entry_folder_is_recomputed(tmp_path, fake_plugins):
    reference = values(run(tmp_path))
    model = entry_file(tmp_path, "train", "mean.npy").parent
    for path in list(model.iterdir()):
        path.unlink()
    trained = fake_plugins.CALLS["train"]
    again = run(tmp_path)
    assert values(again) == reference and fake_plugins.CALLS["train"] == trained + 1
    assert "was damaged (the entry folder is empty)" in log_text(tmp_path)


def test_a_deleted_speech_manifest_is_recomputed(tmp_path, fake_plugins):
    reference = values(run(tmp_path))
    entry_file(tmp_path, "anonymize", "manifest.jsonl").unlink()
    again = run(tmp_path)
    assert values(again) == reference and again.executed.get("anonymize")
    assert "was damaged (file manifest.jsonl is missing)" in log_text(tmp_path)


def test_a_damaged_entry_is_moved_aside(tmp_path, fake_plugins):
    run(tmp_path)
    scores = entry_file(tmp_path, "score", "scores.npz")
    scores.write_bytes(b"garbage")
    run(tmp_path)
    aside = scores.parent.with_name(scores.parent.name + ".damaged")
    assert (aside / "scores.npz").read_bytes() == b"garbage"
    assert np.load(scores)["scores"].size  # the recomputed entry is in place


def test_garbage_over_the_fingerprint_database_is_rebuilt(tmp_path, fake_plugins):
    reference = values(run(tmp_path))
    database = tmp_path / "cache" / "fingerprints" / fp.INDEX_NAME
    assert database.stat().st_size > 0
    database.write_bytes(b"this is not sqlite\n" * 300)
    again = run(tmp_path)
    assert values(again) == reference
    assert not again.executed, "stage keys do not depend on the database"
    assert f"fingerprint database {database} was damaged (file is not a database); rebuilding it" in log_text(tmp_path)


def test_a_cut_off_fingerprint_database_is_rebuilt(tmp_path, caplog):
    for i in range(3):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]) * 100)
    index = fp.FileIndex(tmp_path / "fp")
    index.pending_hashes = [(f"/nowhere/{i:05d}" * 30, 1, 2, 3, 4, 5, "h" * 40) for i in range(3000)]
    index.close()
    database = tmp_path / "fp" / fp.INDEX_NAME
    with open(database, "r+b") as handle:
        handle.truncate(database.stat().st_size // 2)
    with fp.FileIndex(tmp_path / "fp") as index:
        assert index._select("SELECT hash FROM content WHERE path = ?", ("/nowhere/02999" * 30,)) is None
        assert index.file_hash(tmp_path / "1.bin") == file_hash(tmp_path / "1.bin")
    assert "was damaged (database disk image is malformed); rebuilding it" in caplog.text
    with fp.FileIndex(tmp_path / "fp") as index:  # the rebuilt database works
        assert index.file_hash(tmp_path / "1.bin") == file_hash(tmp_path / "1.bin")


def test_a_garbage_content_cache_file_is_recomputed_and_logged(tmp_path, caplog):
    from vpeval.api import PluginContext
    from vpeval.types import Utterance

    audio = tmp_path / "a.wav"
    sf.write(audio, np.linspace(-0.5, 0.5, 8000), 16000)
    utts = [Utterance("a", "spk", str(audio))]
    context = PluginContext(work_dir=tmp_path / "work", options={"cache_root": tmp_path / "cache"})
    calls = []

    def energy(u):
        calls.append(u.id)
        return np.array([float(np.mean(u.load() ** 2))])

    first = cached_map(context, utts, "energy", energy)
    (stored,) = (tmp_path / "cache" / "content" / "energy").rglob("*.npy")
    stored.write_bytes(stored.read_bytes()[:20])
    again = cached_map(context, utts, "energy", energy)
    assert calls == ["a", "a"] and np.array_equal(first[0], again[0])
    assert f"content cache file {stored} was damaged" in caplog.text


def test_a_content_cache_result_of_a_file_replaced_meanwhile_is_not_stored(tmp_path):
    from vpeval.api import PluginContext
    from vpeval.types import Utterance

    audio = tmp_path / "a.wav"
    sf.write(audio, np.linspace(-0.5, 0.5, 8000), 16000)
    context = PluginContext(work_dir=tmp_path / "work", options={"cache_root": tmp_path / "cache"})

    def replaced_while_read(u):
        value = np.array([float(np.mean(u.load() ** 2))])
        sf.write(audio, np.zeros(8000), 16000)  # the hash was taken of the old bytes
        return value

    cached_map(context, [Utterance("a", "spk", str(audio))], "energy", replaced_while_read)
    assert not list((tmp_path / "cache" / "content").rglob("*.npy"))


# -- how entries are checked ------------------------------------------------------------------------------


def _entry(cache: StageCache, files: dict[str, bytes], key: str = "ab" * 32) -> Path:
    with cache.lock("train", key), cache.build("train", key) as folder:
        for name, data in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
    return cache.path("train", key)


def _later(monkeypatch, seconds=60):
    """Check as if `seconds` had passed since the entry was written, so its stamps are trusted."""
    real = fp._clock_ns
    monkeypatch.setattr(fp, "_clock_ns", lambda: real() + seconds * 10**9)


def test_big_entries_are_checked_by_stamp_and_hashed_only_when_it_moved(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "ALWAYS_HASH_BYTES", 0)  # every entry counts as big
    cache = StageCache(tmp_path)
    entry = _entry(cache, {"model.bin": b"w" * 5000, "sub/part.bin": b"p" * 3000})
    hashed = []
    real_hash = fp.file_hash
    monkeypatch.setattr(fp, "file_hash", lambda p: hashed.append(Path(p).name) or real_hash(p))
    # Stamps recorded a moment after the files were written are not trusted yet: the first check, a
    # minute later, hashes them and notes their stamps; from then on an unchanged stamp is enough.
    _later(monkeypatch)
    assert cache.verify("train", entry.name).problem is None and sorted(hashed) == ["model.bin", "part.bin"]
    hashed.clear()
    assert cache.verify("train", entry.name).problem is None and hashed == [], "unchanged stamps: no hashing"
    same_size_edit(entry / "sub" / "part.bin", b"ppp", b"qqq")  # size and mtime kept, ctime moves
    assert cache.verify("train", entry.name).problem == "file sub/part.bin: hash differs"
    assert hashed == ["part.bin"]


def test_a_copied_big_entry_is_hashed_once_then_trusted(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "ALWAYS_HASH_BYTES", 0)
    cache = StageCache(tmp_path)
    entry = _entry(cache, {"model.bin": b"w" * 5000})
    (entry / "model.bin").write_bytes(b"w" * 5000)  # rewritten alike, as a restored backup would be
    _later(monkeypatch)
    hashed = []
    real_hash = fp.file_hash
    monkeypatch.setattr(fp, "file_hash", lambda p: hashed.append(Path(p).name) or real_hash(p))
    assert cache.verify("train", entry.name).problem is None and hashed == ["model.bin"]
    _later(monkeypatch, 120)
    assert cache.verify("train", entry.name).problem is None and hashed == ["model.bin"], "its new stamp was noted"


def test_small_entries_are_hashed_on_every_reuse(tmp_path):
    cache = StageCache(tmp_path)
    entry = _entry(cache, {"results.json": b'[{"value": 1.5}]'})
    assert cache.verify("train", entry.name).problem is None
    same_size_edit(entry / "results.json", b"1.5", b"2.5")
    assert cache.verify("train", entry.name).problem == "file results.json: hash differs"


def test_a_garbled_entry_manifest_is_damage(tmp_path):
    cache = StageCache(tmp_path)
    entry = _entry(cache, {"results.json": b"[]"})
    (entry / ENTRY_MANIFEST).write_text("{not json")
    assert "manifest" in cache.verify("train", entry.name).problem


def test_entries_without_a_manifest_are_reused_and_then_checked(tmp_path, fake_plugins):
    """Entries of vpeval before manifests: reused as they are, and they get a manifest on first use."""
    reference = values(run(tmp_path))
    manifests = list((tmp_path / "cache").glob(f"*/*/*/{ENTRY_MANIFEST}"))
    assert {m.parent.parent.parent.name for m in manifests} == {"anonymize", "train", "score", "metrics"}
    for manifest in manifests:
        manifest.unlink()
    again = run(tmp_path)
    assert not again.executed and values(again) == reference
    assert all(m.exists() for m in manifests), "adopted on reuse"
    scores = entry_file(tmp_path, "score", "scores.npz")
    scores.write_bytes(scores.read_bytes()[:100])
    assert values(run(tmp_path)) == reference and "scores.npz: size differs" in log_text(tmp_path)


def test_an_unreadable_entry_without_a_manifest_is_recomputed(tmp_path, fake_plugins):
    reference = values(run(tmp_path))
    scores = entry_file(tmp_path, "score", "scores.npz")
    (scores.parent / ENTRY_MANIFEST).unlink()
    scores.write_bytes(b"cut")
    again = run(tmp_path)
    assert values(again) == reference and again.executed.get("score")
    assert "was damaged (it cannot be loaded" in log_text(tmp_path)


# -- declared values and files replaced during a run ----------------------------------------------------


def write_manifest(tmp_path: Path, durations: dict[str, float] | None = None) -> Path:
    corpus = make_corpus(tmp_path / "audio", speakers=8, utterances=4, seconds=0.6, seed=5)
    path = tmp_path / "corpus.csv"
    with open(path, "w", newline="") as handle:
        columns = ["id", "path", "speaker", "gender"] + (["duration_s"] if durations is not None else [])
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for u in corpus.utterances:
            row = {"id": u.id, "path": u.path, "speaker": u.speaker, "gender": u.gender}
            if durations is not None:
                row["duration_s"] = durations.get(u.id, round(u.duration, 3))
            writer.writerow(row)
    return path


def manifest_corpus(path: Path) -> str:
    return f"{{use: manifest, params: {{path: {json.dumps(str(path))}}}}}"


def test_editing_a_declared_duration_retires_the_trained_attacker(tmp_path, fake_plugins):
    manifest = write_manifest(tmp_path, {})
    run(tmp_path, manifest_corpus(manifest))
    again = run(tmp_path, manifest_corpus(manifest))
    assert not again.executed, "an unchanged manifest reuses everything"
    rows = list(csv.DictReader(open(manifest)))
    rows[0]["duration_s"] = f"{float(rows[0]['duration_s']) + 0.02:.3f}"  # within the header check's tolerance
    with open(manifest, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    trained = fake_plugins.CALLS["train"]
    edited = run(tmp_path, manifest_corpus(manifest))
    assert "train" in edited.executed and fake_plugins.CALLS["train"] == trained + 1


def test_corpora_declaring_no_other_values_keep_their_fingerprint(tmp_path):
    """The cache keys of experiments whose corpora declare no sample rate or duration stay as they were."""
    import hashlib

    small_corpus = make_corpus(tmp_path, speakers=2, utterances=3, seconds=0.15)
    bare = Corpus("bare", [u.replace(sample_rate=None, duration=None) for u in small_corpus])
    digest = hashlib.sha256()
    for u in sorted(bare.utterances, key=lambda u: u.id):
        row = [u.id, u.speaker, u.gender, u.transcript, u.emotion, u.session, u.channel, file_hash(u.path)]
        digest.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    assert corpus_fingerprint(bare) == digest.hexdigest()
    declared = [u.replace(duration=1.25) if i == 0 else u for i, u in enumerate(bare.utterances)]
    assert corpus_fingerprint(Corpus("d", declared)) != digest.hexdigest()
    rate = [u.replace(sample_rate=16000) if i == 0 else u for i, u in enumerate(bare.utterances)]
    assert corpus_fingerprint(Corpus("r", rate)) not in (digest.hexdigest(), corpus_fingerprint(Corpus("d", declared)))
    # A gender given for the speaker only (a plugin's corpus, say) is declared too.
    genderless = [u.replace(gender=None) for u in bare.utterances]
    speaker = genderless[0].speaker
    assert corpus_fingerprint(Corpus("g", genderless, {speaker: "f"})) != corpus_fingerprint(Corpus("g", genderless))


def test_a_file_replaced_during_the_run_is_not_stored_under_the_old_fingerprint(tmp_path, fake_plugins, monkeypatch):
    manifest = write_manifest(tmp_path)
    victim = next(iter(sorted((tmp_path / "audio").glob("*.wav"))))
    original = fake_plugins.FakeShift.anonymize
    marker = tmp_path / "replaced"  # the run's workers (threads or forked processes) anonymize side by side

    def replaces_a_file(self, audio, rate, voice):
        try:  # only the first call, in whichever worker: creating the marker is atomic across processes
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            first = True
        except FileExistsError:
            first = False
        if first:  # after the data stage fingerprinted the corpus, before the stage is stored
            data, file_rate = sf.read(victim)
            # replaced whole (os.replace), as an editor or rsync does: the run's other workers may be reading it
            sf.write(victim.with_name("replacement.wav"), data[::-1], file_rate, subtype="PCM_16")
            os.replace(victim.with_name("replacement.wav"), victim)
        return original(self, audio, rate, voice)

    monkeypatch.setattr(fake_plugins.FakeShift, "anonymize", replaces_a_file)
    with pytest.raises(DataError, match=f"Audio file {victim} changed during the run.*rerun the experiment"):
        run(tmp_path, manifest_corpus(manifest))
    cache = tmp_path / "cache" / "anonymize"
    assert not [p for p in cache.glob("*/*") if p.is_dir()], "neither an entry nor a partial folder is kept"
    monkeypatch.setattr(fake_plugins.FakeShift, "anonymize", original)
    rerun = run(tmp_path, manifest_corpus(manifest))  # the new audio, under its own fingerprint
    assert rerun.executed.get("anonymize")


# -- the cache folder ---------------------------------------------------------------------------------------


def test_an_empty_vpeval_cache_means_the_default(monkeypatch):
    monkeypatch.setenv("VPEVAL_CACHE", "")
    assert default_cache_root() == Path(".vpeval-cache")
    monkeypatch.setenv("VPEVAL_CACHE", "  ")
    assert default_cache_root() == Path(".vpeval-cache")
    monkeypatch.setenv("VPEVAL_CACHE", "/somewhere/cache")
    assert default_cache_root() == Path("/somewhere/cache")


def test_a_cache_path_that_is_a_file_is_refused_in_one_sentence(tmp_path):
    file = tmp_path / "cache.txt"
    file.write_text("x")
    with pytest.raises(
        UserError, match=r"The cache folder .*cache.txt is a file; give --cache or VPEVAL_CACHE a folder"
    ):
        StageCache(file)
    with pytest.raises(UserError, match=r"lies inside .*cache.txt, which is a file"):
        StageCache(file / "sub")
