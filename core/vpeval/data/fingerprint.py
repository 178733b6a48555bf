"""A content fingerprint of a corpus: labels plus the bytes of every audio file.

The run cache keys on it, so editing a transcript or re-recording a file invalidates exactly the
results that depend on it. Hashing file bytes is the slow part; a small sqlite index (`FileIndex`)
remembers each file's hash under (path, size, mtime_ns, ctime_ns, inode), so re-fingerprinting an
unchanged large corpus only stats files. The ctime is what makes this safe: `touch -r` or os.utime can
set the mtime back after a same-size rewrite, but every write or utime moves the ctime to "now", and
nothing short of changing the system clock sets it back. The same index keeps each file's audio
check (`vpeval.data.scan`), keyed by content hash, so a second run neither hashes nor decodes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from vpeval.types import Corpus

INDEX_NAME = "file-hashes.sqlite"
_CHUNK = 1 << 20
# A file changed within this long before it was hashed may change again within the same timestamp tick
# (coarse kernel clocks, 2-second file systems) without its ctime moving: such a row is not trusted and
# the file is hashed again on the next look-up ("racily clean", as git calls it).
RACY_NS = 2_000_000_000


def corpus_fingerprint(corpus: Corpus, cache_folder: str | os.PathLike | None = None) -> str:
    """Hex digest of the sorted (id, speaker, gender, transcript, emotion, session, channel, file hash).

    A missing file hashes as "missing" rather than failing: scanning for bad audio is a separate step
    (`vpeval.data.scan.scan_corpus`), and the fingerprint still changes when the file appears.
    """
    index = FileIndex(cache_folder) if cache_folder is not None else None
    try:
        rows = []
        for u in sorted(corpus.utterances, key=lambda u: u.id):
            content = index.file_hash(u.path) if index else file_hash(u.path)
            rows.append([u.id, u.speaker, u.gender, u.transcript, u.emotion, u.session, u.channel, content])
    finally:
        if index:
            index.close()
    digest = hashlib.sha256()
    for row in rows:
        digest.update(json.dumps(row, ensure_ascii=False).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def file_hash(path: str | os.PathLike) -> str:
    """blake2b of a file's bytes, or "missing" when there is no such file (or it is not a file)."""
    try:
        with open(path, "rb") as handle:
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
    index (keyed by size and mtime only) are left unread.
    """

    def __init__(self, cache_folder: str | os.PathLike):
        db_path = Path(cache_folder) / INDEX_NAME
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db_path, timeout=30)
        with self.db:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS content (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, "
                "ctime_ns INTEGER, inode INTEGER, hashed_ns INTEGER, hash TEXT)"
            )
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS audio_checks (hash TEXT, channel INTEGER, version INTEGER, "
                "result TEXT, PRIMARY KEY (hash, channel, version))"
            )
        self.pending_hashes: list[tuple[Any, ...]] = []
        self.pending_checks: list[tuple[Any, ...]] = []

    def file_hash(self, path: str | os.PathLike) -> str:
        full = os.path.abspath(path)
        started = _clock_ns()
        try:
            st = os.stat(full)
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        with closing(self.db.execute(
            "SELECT size, mtime_ns, ctime_ns, inode, hashed_ns, hash FROM content WHERE path = ?", (full,)
        )) as cur:
            row = cur.fetchone()
        stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        if row is not None and tuple(row[:4]) == stamp and row[4] - st.st_ctime_ns > RACY_NS:
            return row[5]
        content = file_hash(full)
        if content != "missing":
            self.pending_hashes.append((full, *stamp, started, content))
        return content

    def audio_check(self, content: str, channel: int | None, version: int, compute: Callable[[], dict]) -> dict:
        """The remembered result of `compute()` for this content and channel, computing it when new.

        `version` names the check's definition: a new version never reads results of an older one.
        """
        key = (content, -1 if channel is None else int(channel), int(version))
        with closing(self.db.execute(
            "SELECT result FROM audio_checks WHERE hash = ? AND channel = ? AND version = ?", key
        )) as cur:
            row = cur.fetchone()
        if row is not None:
            return json.loads(row[0])
        result = compute()
        if content != "missing":
            self.pending_checks.append((*key, json.dumps(result)))
        return result

    def close(self) -> None:
        try:
            with self.db:
                if self.pending_hashes:
                    self.db.executemany("INSERT OR REPLACE INTO content VALUES (?, ?, ?, ?, ?, ?, ?)", self.pending_hashes)
                if self.pending_checks:
                    self.db.executemany("INSERT OR REPLACE INTO audio_checks VALUES (?, ?, ?, ?)", self.pending_checks)
        finally:
            self.db.close()

    def __enter__(self) -> FileIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
