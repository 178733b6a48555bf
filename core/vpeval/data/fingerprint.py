"""A content fingerprint of a corpus: labels plus the bytes of every audio file.

The run cache keys on it, so editing a transcript or re-recording a file invalidates exactly the
results that depend on it. Hashing file bytes is the slow part; a small sqlite index remembers each
file's hash under (path, size, mtime_ns) so re-fingerprinting an unchanged large corpus only stats files.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

from vpeval.types import Corpus

INDEX_NAME = "file-hashes.sqlite"
_CHUNK = 1 << 20


def corpus_fingerprint(corpus: Corpus, cache_folder: str | os.PathLike | None = None) -> str:
    """Hex digest of the sorted (id, speaker, gender, transcript, emotion, session, channel, file hash).

    A missing file hashes as "missing" rather than failing: scanning for bad audio is a separate step
    (`vpeval.data.scan.scan_corpus`), and the fingerprint still changes when the file appears.
    """
    index = _HashIndex(Path(cache_folder) / INDEX_NAME) if cache_folder is not None else None
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
    """blake2b of a file's bytes, or "missing" when there is no such file."""
    try:
        with open(path, "rb") as handle:
            h = hashlib.blake2b(digest_size=20)
            while chunk := handle.read(_CHUNK):
                h.update(chunk)
            return h.hexdigest()
    except FileNotFoundError:
        return "missing"


class _HashIndex:
    """File hashes remembered by (absolute path, size, mtime_ns); written in one transaction."""

    def __init__(self, db_path: Path):
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db_path, timeout=30)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS hashes (path TEXT PRIMARY KEY, size INTEGER, mtime_ns INTEGER, hash TEXT)"
        )
        self.pending: list[tuple[str, int, int, str]] = []

    def file_hash(self, path: str) -> str:
        full = os.path.abspath(path)
        try:
            st = os.stat(full)
        except FileNotFoundError:
            return "missing"
        with closing(self.db.execute("SELECT size, mtime_ns, hash FROM hashes WHERE path = ?", (full,))) as cur:
            row = cur.fetchone()
        if row is not None and row[0] == st.st_size and row[1] == st.st_mtime_ns:
            return row[2]
        content = file_hash(full)
        self.pending.append((full, st.st_size, st.st_mtime_ns, content))
        return content

    def close(self) -> None:
        try:
            if self.pending:
                with self.db:
                    self.db.executemany("INSERT OR REPLACE INTO hashes VALUES (?, ?, ?, ?)", self.pending)
        finally:
            self.db.close()
