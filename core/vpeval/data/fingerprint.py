"""A content fingerprint of a corpus: every declared value of each utterance plus the bytes of its audio file.

The run cache keys on it, so editing a transcript or a declared duration, or re-recording a file,
invalidates exactly the results that depend on it. Hashing file bytes is the slow part; a small sqlite
index (`FileIndex`) remembers each file's hash under (path, size, mtime_ns, ctime_ns, inode), so re-fingerprinting an
unchanged large corpus only stats files. The ctime is what makes this safe: `touch -r` or os.utime can
set the mtime back after a same-size rewrite, but every write or utime moves the ctime to "now", and
nothing short of changing the system clock sets it back. The same index keeps each file's audio
check (`vpeval.data.scan`), keyed by content hash, so a second run neither hashes nor decodes.

A damaged index (garbage or a cut-off file) is moved aside and rebuilt, with a line in the run log: it
only remembers work, so nothing is lost but time. While `observing_files` is open, the stat stamp of
every file hashed is kept, so the runner can tell a file replaced during the run from the one that
was fingerprinted (`changed_file`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from vpeval.types import Corpus, Utterance

INDEX_NAME = "file-hashes.sqlite"
# The first fingerprints hashed these fields (and the file); the utterance's other declared values join
# the row only when given, so corpora that declare none keep their fingerprint (and cache keys).
_FIRST_FIELDS = ("id", "speaker", "gender", "transcript", "emotion", "session", "channel")
_NOT_DECLARED = {"path"}  # where the audio is: its bytes are hashed instead
_log = logging.getLogger("vpeval.fingerprint")
_observed: dict[str, list[int]] | None = None  # while observing_files is open: path -> first stamp seen
_CHUNK = 1 << 20
# A file changed within this long before it was hashed may change again within the same timestamp tick
# (coarse kernel clocks, 2-second file systems) without its ctime moving: such a row is not trusted and
# the file is hashed again on the next look-up ("racily clean", as git calls it).
RACY_NS = 2_000_000_000


def corpus_fingerprint(corpus: Corpus, cache_folder: str | os.PathLike | None = None) -> str:
    """Hex digest of the sorted (id, speaker, gender, transcript, emotion, session, channel, file hash,
    {every other declared value: sample_rate, duration, ...}) rows (the last only when any is given),
    and of speaker genders the utterances do not carry (only when there are any).

    Fingerprint a corpus as its source declares it, before `scan_corpus` fills in rates and durations
    from the headers. A missing file hashes as "missing" rather than failing: scanning for bad audio is a
    separate step (`vpeval.data.scan.scan_corpus`), and the fingerprint still changes when the file appears.
    """
    index = FileIndex(cache_folder) if cache_folder is not None else None
    try:
        rows = []
        ordered = sorted(corpus.utterances, key=lambda u: u.id)
        hash_ahead(u.path for u in ordered if not (index and index.knows(u.path)))
        for u in ordered:
            content = index.file_hash(u.path) if index else file_hash(u.path)
            rows.append([getattr(u, name) for name in _FIRST_FIELDS] + [content] + _other_declared(u))
    finally:
        if index:
            index.close()
    if speaker_only := _speaker_only_genders(corpus):
        rows.append(["speaker_gender", speaker_only])
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _speaker_only_genders(corpus: Corpus) -> dict[str, str]:
    """Genders the corpus gives its speakers beyond what their utterances say (plans and metrics use them)."""
    said: dict[str, set] = {}
    for u in corpus.utterances:
        said.setdefault(u.speaker, set()).add(u.gender)
    return {spk: g for spk, g in sorted(corpus.speaker_gender.items()) if spk in said and said[spk] != {g}}


def _other_declared(u: Utterance) -> list[dict[str, Any]]:
    """[{field: value}] of the utterance's declared values beyond the first fields, or [] when none is given."""
    others = {
        f.name: getattr(u, f.name)
        for f in dataclasses.fields(u)
        if f.name not in _FIRST_FIELDS and f.name not in _NOT_DECLARED
    }
    given = {name: value for name, value in others.items() if value is not None}
    return [given] if given else []


def file_stamp(path: str | os.PathLike) -> list[int] | None:
    """[size, mtime_ns, ctime_ns, inode] of a file, or None when there is none: any write or utime changes it."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


@contextmanager
def observing_files() -> Iterator[dict[str, list[int]]]:
    """Within the block, keep the stamp of every file hashed (the first one seen per absolute path)."""
    global _observed
    outer, _observed = _observed, {}
    try:
        yield _observed
    finally:
        _observed = outer


def _observe(path: str, stamp: list[int]) -> None:
    if _observed is not None:
        _observed.setdefault(os.path.abspath(path), stamp)


def changed_file(paths: Iterable[str], stamps: dict[str, list[int]]) -> str | None:
    """The first of `paths` whose stamp differs from the one in `stamps` (paths not in it are not checked)."""
    for path in paths:
        full = os.path.abspath(path)
        expected = stamps.get(full)
        if expected is not None and file_stamp(full) != expected:
            return path
    return None


_remembered: dict[tuple, str] | None = None  # while remembered_hashes is open: (path, stamp) -> hash
_threads = 1  # while remembered_hashes is open: the threads that check a list of files (the run's workers)


@contextmanager
def remembered_hashes(threads: int = 1) -> Iterator[dict[tuple, str]]:
    """Within the block (a run) hash each file once, known by path and stamp as FileIndex knows it: the content
    caches of several stages key on the same files (issue 39). Lists of files are hashed and measured ahead
    on `threads` threads (`hash_ahead`, `thread_results`)."""
    global _remembered, _threads
    outer, _remembered = _remembered, {} if _remembered is None else _remembered
    outer_threads, _threads = _threads, max(1, threads)
    try:
        yield _remembered
    finally:
        _remembered, _threads = outer, outer_threads


def checking_threads() -> int:
    """The threads that hash and measure a list of files in this block (1 outside remembered_hashes)."""
    return _threads


def thread_results(function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """function(item) for each item, on the block's threads: file reads, hashlib and numpy on whole blocks let
    the other threads run. An exception is returned in the item's place, for the caller's in-order pass."""

    def guarded(item: Any) -> Any:
        try:
            return function(item)
        except Exception as exc:  # noqa: BLE001 - handed back in place, raised in order by the caller
            return exc

    items = list(items)
    if _threads < 2 or len(items) < 2:
        return [guarded(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(_threads, len(items))) as pool:
        return list(pool.map(guarded, items))


def remember_as(path: str | os.PathLike, digest: str, stamp: list[int]) -> None:
    """Within remembered_hashes: `path` holds the content `digest` while its stamp is `stamp` (a file this run
    hashed under another name, moved by a rename that leaves stamps as they were)."""
    if _remembered is not None and file_stamp(path) == stamp:
        _remembered[(os.path.abspath(path), *stamp)] = digest


def hash_ahead(paths: Iterable[str | os.PathLike]) -> None:
    """Hash the files of `paths` this run has not hashed, on its threads, so that the file_hash calls that
    follow in their own order find them remembered (only within remembered_hashes, with threads to spare)."""
    if _remembered is None or _threads < 2:
        return
    todo: dict[tuple, str] = {}
    for path in paths:
        if (stamp := file_stamp(path)) is not None and os.path.isfile(path):  # never a FIFO (see file_hash)
            if (key := (os.path.abspath(path), *stamp)) not in _remembered:
                todo.setdefault(key, str(path))
    for key, digest in zip(todo, thread_results(_hash_bytes, todo.values())):
        if isinstance(digest, str):  # an unreadable file is hashed (and named) again by the caller's pass
            _remembered[key] = digest


def file_hash(path: str | os.PathLike) -> str:
    """blake2b of a file's bytes, or "missing" when there is no such file (or it is not a file)."""
    if not os.path.isfile(path):  # a FIFO would block the open, /dev/zero never end; the scan names the file
        return "missing"
    if _remembered is not None and (stamp := file_stamp(path)) is not None:
        key = (os.path.abspath(path), *stamp)
        if key not in _remembered:
            _remembered[key] = _hash_bytes(path)
        _observe(str(path), stamp)
        return _remembered[key]
    return _hash_bytes(path)


def _hash_bytes(path: str | os.PathLike) -> str:
    try:
        with open(path, "rb") as handle:
            if _observed is not None:
                st = os.fstat(handle.fileno())
                _observe(str(path), [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
            h = hashlib.blake2b(digest_size=20)
            while chunk := handle.read(_CHUNK):
                h.update(chunk)
            return h.hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return "missing"


def _clock_ns() -> int:
    return time.time_ns()


class FileIndex:
    """File hashes by (absolute path, size, mtime_ns, ctime_ns, inode) and audio checks by content hash.

    Writes are collected and stored in one transaction on `close`. Tables from older versions of this
    index (keyed by size and mtime only) are left unread. A database that sqlite finds damaged, when
    opened or later, is moved aside (`file-hashes.sqlite.damaged`) and started again, empty.
    """

    def __init__(self, cache_folder: str | os.PathLike):
        self.db_path = Path(cache_folder) / INDEX_NAME
        self.db_path.parent.mkdir(parents=True, exist_ok=True)
        self.pending_hashes: list[tuple[Any, ...]] = []
        self.pending_checks: list[tuple[Any, ...]] = []
        self._rows: dict[tuple, tuple[Any, ...] | None] = {}  # (sql, args) -> the row read (written only at close)
        try:
            self.db = self._open()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self.db = self._rebuild(exc)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.db_path, timeout=30)
        try:
            with db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS content (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
                    "ctime_ns INTEGER, inode INTEGER, hashed_ns INTEGER, hash TEXT)"
                )
                db.execute(
                    "CREATE TABLE IF NOT EXISTS audio_checks (hash TEXT, channel INTEGER, version INTEGER, "
                    "result TEXT, PRIMARY KEY (hash, channel, version))"
                )
        except BaseException:
            db.close()
            raise
        return db

    def _rebuild(self, exc: sqlite3.DatabaseError, db: sqlite3.Connection | None = None) -> sqlite3.Connection:
        """Move the damaged database (and its journals) aside and open a new, empty one."""
        _log.warning(
            "fingerprint database %s was damaged (%s); rebuilding it (file hashes and audio checks are computed again)",
            self.db_path,
            exc,
        )
        if db is not None:
            db.close()
        try:
            os.replace(self.db_path, self.db_path.with_name(INDEX_NAME + ".damaged"))
        except FileNotFoundError:  # another process moved it aside first
            pass
        for suffix in ("-journal", "-wal", "-shm"):
            self.db_path.with_name(INDEX_NAME + suffix).unlink(missing_ok=True)
        return self._open()

    def _select(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """One row, or None, read once per instance: the look-ahead passes (`knows`, `stored_check`) and the in-order
        ones ask for the same rows, and this index writes only when it closes."""
        if (sql, args) not in self._rows:
            self._rows[(sql, args)] = self._read_row(sql, args)
        return self._rows[(sql, args)]

    def _read_row(self, sql: str, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        """One row, or None; a database found damaged here is rebuilt (and the row is missing)."""
        try:
            with closing(self.db.execute(sql, args)) as cur:
                return cur.fetchone()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self.db = self._rebuild(exc, self.db)
            return None

    def knows(self, path: str | os.PathLike) -> bool:
        """Whether file_hash(path) needs no reading: the index holds its hash, or there is no such file."""
        full = os.path.abspath(path)
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            return True
        return self._stored(full, st) is not None

    def _stored(self, full: str, st: os.stat_result) -> str | None:
        """The hash the index holds for this file as it is now, if it can be trusted."""
        row = self._select(
            "SELECT size, mtime_ns, ctime_ns, inode, hashed_ns, hash FROM content WHERE path = ?", (full,)
        )
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if (
            row is not None
            and tuple(row[:4]) == stamp
            and isinstance(row[4], int)
            and row[4] - st.st_ctime_ns > RACY_NS
            and isinstance(row[5], str)
        ):
            return row[5]
        return None

    def file_hash(self, path: str | os.PathLike) -> str:
        full = os.path.abspath(path)
        started = _clock_ns()
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        _observe(full, list(stamp))
        if (stored := self._stored(full, st)) is not None:
            if _remembered is not None:  # the run's later file_hash calls need not read the file either
                _remembered[(full, *stamp)] = stored
            return stored
        content = file_hash(full)
        if content != "missing":
            self.pending_hashes.append((full, *stamp, started, content))
        return content

    def audio_check(self, content: str, channel: int | None, version: int, compute: Callable[[], dict]) -> dict:
        """The remembered result of `compute()` for this content and channel, computing it when new.

        `version` names the check's definition: a new version never reads results of an older one.
        """
        key = (content, -1 if channel is None else int(channel), int(version))
        if (remembered := self.stored_check(*key)) is not None:
            return remembered
        result = compute()
        if content != "missing":
            self.pending_checks.append((*key, json.dumps(result)))
        return result

    def stored_check(self, content: str, channel: int, version: int) -> dict | None:
        """The audio check the index holds for this content, channel (-1: the mix) and version, or None."""
        sql = "SELECT result FROM audio_checks WHERE hash = ? AND channel = ? AND version = ?"
        row = self._select(sql, (content, channel, version))
        try:
            remembered = json.loads(row[0]) if row is not None else None
        except (TypeError, ValueError):  # a row that is not ours: measure again
            remembered = None
        return remembered if isinstance(remembered, dict) else None

    def close(self) -> None:
        try:
            try:
                self._store()
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise
                self.db = self._rebuild(exc, self.db)
                self._store()
        finally:
            self.db.close()

    def _store(self) -> None:
        with self.db:
            if self.pending_hashes:
                self.db.executemany("INSERT OR REPLACE INTO content VALUES (?, ?, ?, ?, ?, ?, ?)", self.pending_hashes)
            if self.pending_checks:
                self.db.executemany("INSERT OR REPLACE INTO audio_checks VALUES (?, ?, ?, ?)", self.pending_checks)

    def __enter__(self) -> FileIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether sqlite says the file is not a database or is corrupt (not merely locked or read-only)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name:
        return name == "SQLITE_NOTADB" or name.startswith("SQLITE_CORRUPT")
    text = str(exc)
    return "not a database" in text or "malformed" in text
