"""A content-keyed stage cache: every stage output lives under a hash of what produced it.

The key hashes the plugin's distribution, version and validated params, the keys of the stage's
inputs and the data fingerprint. A folder is complete only once renamed into place, so a run killed
at any point leaves either a finished entry or nothing (plus a partial folder that a resumed run
continues from, for stages that produce many files).

One process at a time computes an entry: it holds the entry's lock (`lock`) while it checks, computes
and stores it, and only the lock's holder writes the partial folder. The lock dies with its process,
so the next run adopts what a killed run left in the partial folder.

Every entry checks itself (`verify`): its last file, written atomically inside the build, is a
manifest (`ENTRY_MANIFEST`) with each file's size, blake2b hash and stat stamp (mtime_ns, ctime_ns,
inode). A reuse always checks that every file is there with its size. Then:

- entries of at most `ALWAYS_HASH_BYTES` in all (metric rows, scores, small models: nearly every
  entry) are hashed in full on every reuse, so any edit, even one that keeps size and mtime, is caught;
- in bigger entries (trained models, anonymized corpora of thousands of wavs) a file is hashed again
  only when its stamp differs from the one recorded. Every write or utime moves a file's ctime to
  "now" and nothing sets it back, so an unchanged stamp means unchanged bytes, as in the corpus's
  file index (`vpeval.data.fingerprint`); stamps recorded less than `RACY_NS` after the file changed
  are not trusted (a later write in the same clock tick would not move them). A file that hashes
  right although its stamp moved (a copied or restored cache) gets its new stamp in a note next to
  the entry (`<key>.verified.json`), so it is hashed once, not on every reuse. (A big entry reused
  within RACY_NS of its build is hashed for the same reason; the first later reuse notes its stamps.)

The hashes are computed once, when the entry is built, after the stage's own work.

Why so: hashing everything on every reuse would cost seconds to minutes for a corpus of gigabytes,
while stat-ing its files costs milliseconds, and a stamp with the ctime in it moves with every edit,
even one that puts the mtime back. Small entries are hashed anyway because it costs nothing.

A damaged entry is moved aside (`<key>.damaged`, replacing an older one) and recomputed. Entries
written before manifests existed are reused as they are when they load (recomputed when they do not),
and get a manifest then; so an entry whose manifest was deleted is taken for such an older one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vpeval.atomic import write_text_atomic
from vpeval.data import fingerprint
from vpeval.errors import UserError
from vpeval.run.locks import file_lock

STAGES = ("data", "anonymize", "frontend", "train", "score", "metrics")
ENTRY_MANIFEST = ".vpeval-entry.json"  # each entry's own list of files, sizes, hashes and stamps
# Entries up to this size in all are hashed in full on every reuse (about 30 ms); bigger ones by stamp.
ALWAYS_HASH_BYTES = 32 << 20
ABOUT = ".about.json"  # `<key>.about.json`, beside an entry: what `vpeval cache` shows of it (StageCache.note)


class CacheFolderError(UserError):
    """The cache folder cannot be used: it, or a folder it would be made in, is a file."""


def stable_key(payload: Any) -> str:
    """sha256 of the canonical JSON of payload."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def check_cache_folder(root: Path) -> None:
    """Refuse a cache path that is a file, or lies under one, in one sentence (mkdir would fail later)."""
    for folder in (root, *root.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                what = "a file" if folder.exists() else "a broken link"
                where = f"is {what}" if folder == root else f"lies inside {folder}, which is {what}"
                raise CacheFolderError(
                    f"The cache folder {root} {where}; give --cache or VPEVAL_CACHE a folder (new or existing)."
                )
            return


@dataclass
class EntryCheck:
    """What `StageCache.verify` found: `problem` says why the entry cannot be used (None: it can)."""

    problem: str | None = None
    legacy: bool = False  # no manifest: written before entries had one


class StageCache:
    def __init__(self, root: str | Path, force: set[str] | None = None, throwaway: bool = False):
        self.root = Path(root)
        self.throwaway = throwaway  # removed when the run ends (--no-cache)
        check_cache_folder(self.root)
        self.force = set(force or ())
        self._rebuilt: set[Path] = set()
        self.plugins: dict[str, list[str]] = {}  # key -> the plugins its payload names, directly or by an input's key

    def key(self, stage: str, payload: Any) -> str:
        key = stable_key({"stage": stage, **payload}) if isinstance(payload, dict) else stable_key([stage, payload])
        self.plugins[key] = sorted(plugins_named(payload, self.plugins))
        return key

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / key

    @contextmanager
    def lock(self, stage: str, key: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the entry's inter-process lock: other processes wait until the block ends."""
        with file_lock(self.root / stage / key[:2] / f"{key}.lock", on_wait):
            yield

    def note(self, stage: str, key: str, **about: Any) -> None:
        """Write the entry's note (`vpeval cache` shows it; nothing reads it to reuse the entry) or, given nothing,
        touch it: its mtime is the entry's last build or reuse."""
        path = self.path(stage, key).with_name(key + ABOUT)
        created = datetime.now(UTC).isoformat(timespec="seconds")
        about = {"stage": stage, **about, "plugins": self.plugins.get(key, []), "created": created} if about else {}
        with suppress(OSError):  # a lost note costs only 'unknown' in `vpeval cache`
            write_text_atomic(path, json.dumps(about)) if about else os.utime(path)

    def partial_path(self, stage: str, key: str) -> Path:
        """A folder that survives interruption, for stages that write many files one by one.

        Write it only while holding the entry's lock, and each file through `atomic_file`.
        """
        path = self.root / stage / key[:2] / f"{key}.partial"
        if stage in self.force and path not in self._rebuilt and path.exists():
            shutil.rmtree(path)
        self._rebuilt.add(path)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def discard_partial(self, stage: str, key: str) -> None:
        """Remove the entry's partial folder (its files came from inputs that changed); hold the lock."""
        shutil.rmtree(self.root / stage / key[:2] / f"{key}.partial", ignore_errors=True)

    def exists(self, stage: str, key: str) -> bool:
        path = self.path(stage, key)
        if stage in self.force and path not in self._rebuilt:
            return False
        return path.is_dir()

    def verify(self, stage: str, key: str) -> EntryCheck:
        """Whether the existing entry is as it was written (see the module docstring for what is hashed)."""
        return verify_entry(self.path(stage, key))

    def adopt(self, stage: str, key: str) -> None:
        """Give an entry written before manifests existed its manifest, so later damage is seen."""
        write_entry_manifest(self.path(stage, key))

    def discard(self, stage: str, key: str) -> Path:
        """Move a damaged entry aside (to `<key>.damaged`, replacing an older one); return where it went."""
        final = self.path(stage, key)
        aside = final.with_name(f"{key}.damaged")
        shutil.rmtree(aside, ignore_errors=True)
        try:
            os.replace(final, aside)
        except OSError:  # an older damaged copy could not be removed: drop this one instead
            shutil.rmtree(final, ignore_errors=True)
        _notes_path(final).unlink(missing_ok=True)
        return aside

    @contextmanager
    def build(self, stage: str, key: str) -> Iterator[Path]:
        """A temporary folder to fill; renamed to the final path when the block ends without error.

        The entry's manifest is written last, into the temporary folder, so a finished entry always has one.
        Call it holding the entry's lock: temporary folders of this key that a killed run left are removed.
        """
        final = self.path(stage, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        for stale in final.parent.glob(f".{key}.*"):
            shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=final.parent))
        try:
            yield tmp
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            files = write_entry_manifest(tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if final.exists():
            shutil.rmtree(final)
        _notes_path(final).unlink(missing_ok=True)
        os.replace(tmp, final)
        for rel, recorded in files.items():  # the rename moved no file's stamp: the run need not hash them again
            fingerprint.remember_as(final / rel, recorded["hash"], recorded["stamp"])
        self._rebuilt.add(final)
        partial = final.parent / f"{key}.partial"
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)


def plugins_named(payload: Any, known: dict[str, list[str]]) -> set[str]:
    """ "kind use" of every plugin identity in a key's payload, and those of the entries whose keys it holds."""
    if isinstance(payload, dict):
        own = {f"{payload['kind']} {payload['use']}"} if {"kind", "use"} <= payload.keys() else set()
        return own.union(*(plugins_named(v, known) for v in payload.values()))
    if isinstance(payload, (list, tuple)):
        return set().union(*(plugins_named(v, known) for v in payload))
    return set(known.get(payload, ())) if isinstance(payload, str) else set()


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _entry_files(folder: Path) -> list[str]:
    """The entry's files, relative to it, without its manifest (or a manifest's temporary copy)."""
    out = []
    for directory, _subfolders, names in os.walk(folder):
        for name in names:
            if name == ENTRY_MANIFEST or name.startswith(f".{ENTRY_MANIFEST}."):
                continue
            out.append(os.path.relpath(os.path.join(directory, name), folder))
    return sorted(out)


def write_entry_manifest(folder: Path) -> dict[str, dict]:
    """Record every file's stamp and hash in the folder's manifest (atomically, as its last file); returns them."""
    recorded = fingerprint._clock_ns()
    files = {}
    names = _entry_files(folder)
    fingerprint.hash_ahead(folder / rel for rel in names)
    for rel in names:
        path = folder / rel
        stamp = _stamp(os.stat(path))
        files[rel] = {"stamp": stamp, "hash": fingerprint.file_hash(path)}
    text = json.dumps({"recorded_ns": recorded, "files": files}, separators=(",", ":"))
    write_text_atomic(folder / ENTRY_MANIFEST, text)
    return files


def _notes_path(entry: Path) -> Path:
    """Stamps of files found intact after their stamp moved (a copied cache): kept outside the entry."""
    return entry.with_name(f"{entry.name}.verified.json")


def _trusted(stamp: list[int], recorded: Any, recorded_ns: Any) -> bool:
    """An unchanged stamp, recorded safely after the file's last change (see fingerprint.RACY_NS)."""
    return stamp == recorded and isinstance(recorded_ns, int) and recorded_ns - stamp[2] > fingerprint.RACY_NS


def _read_manifest(folder: Path) -> tuple[int, dict[str, tuple[list[int], str]]] | None:
    """(recorded_ns, {file: (stamp, hash)}), or None when the manifest is not one vpeval wrote."""
    try:
        data = json.loads((folder / ENTRY_MANIFEST).read_text())
        files = {rel: (list(e["stamp"]), str(e["hash"])) for rel, e in data["files"].items()}
        recorded = data["recorded_ns"]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not isinstance(recorded, int) or any(
        len(stamp) != 4 or not isinstance(stamp[0], int) for stamp, _ in files.values()
    ):
        return None
    return recorded, files


def verify_entry(folder: Path) -> EntryCheck:
    """Check a finished entry against its manifest; note stamps of files that hashed right after moving."""
    if not (folder / ENTRY_MANIFEST).exists():
        if not _entry_files(folder):
            return EntryCheck("the entry folder is empty")
        return EntryCheck(legacy=True)
    manifest = _read_manifest(folder)
    if manifest is None:
        return EntryCheck(f"its manifest {ENTRY_MANIFEST} is unreadable")
    recorded, files = manifest
    started = fingerprint._clock_ns()
    try:
        notes = json.loads(_notes_path(folder).read_text())
        noted, noted_ns = dict(notes["stamps"]), notes["recorded_ns"]
    except (OSError, ValueError, TypeError, KeyError):
        noted, noted_ns = {}, None
    hash_all = sum(stamp[0] for stamp, _ in files.values()) <= ALWAYS_HASH_BYTES
    moved = {}
    for rel, (written, digest) in files.items():
        path = folder / rel
        try:
            stamp = _stamp(os.stat(path))
        except (FileNotFoundError, NotADirectoryError):
            return EntryCheck(f"file {rel} is missing")
        if stamp[0] != written[0]:
            return EntryCheck(f"file {rel}: size differs, {stamp[0]} bytes instead of {written[0]}")
        if not hash_all and (_trusted(stamp, written, recorded) or _trusted(stamp, noted.get(rel), noted_ns)):
            continue
        if fingerprint.file_hash(path) != digest:
            return EntryCheck(f"file {rel}: hash differs")
        if not hash_all:
            moved[rel] = stamp
    if moved:
        try:
            write_text_atomic(_notes_path(folder), json.dumps({"recorded_ns": started, "stamps": {**noted, **moved}}))
        except OSError:  # a read-only cache: the files are hashed again next time
            pass
    return EntryCheck()
