"""A content-keyed stage cache: every stage output lives under a hash of what produced it.

The key hashes the plugin's distribution, version and validated params, the keys of the stage's
inputs and the data fingerprint. A folder is complete only once renamed into place, so a run killed
at any point leaves either a finished entry or nothing (plus a partial folder that a resumed run
continues from, for stages that produce many files).

One process at a time computes an entry: it holds the entry's lock (`lock`) while it checks, computes
and stores it, and only the lock's holder writes the partial folder. The lock dies with its process,
so the next run adopts what a killed run left in the partial folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vpeval.run.locks import file_lock

STAGES = ("data", "anonymize", "frontend", "train", "score", "metrics")


def stable_key(payload: Any) -> str:
    """sha256 of the canonical JSON of payload."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class StageCache:
    def __init__(self, root: str | Path, force: set[str] | None = None):
        self.root = Path(root)
        self.force = set(force or ())
        self._rebuilt: set[Path] = set()

    def key(self, stage: str, payload: Any) -> str:
        return stable_key({"stage": stage, **payload}) if isinstance(payload, dict) else stable_key([stage, payload])

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / key

    @contextmanager
    def lock(self, stage: str, key: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the entry's inter-process lock: other processes wait until the block ends."""
        with file_lock(self.root / stage / key[:2] / f"{key}.lock", on_wait):
            yield

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

    def exists(self, stage: str, key: str) -> bool:
        path = self.path(stage, key)
        if stage in self.force and path not in self._rebuilt:
            return False
        return path.is_dir()

    @contextmanager
    def build(self, stage: str, key: str) -> Iterator[Path]:
        """A temporary folder to fill; renamed to the final path when the block ends without error.

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
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        self._rebuilt.add(final)
        partial = final.parent / f"{key}.partial"
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)


@contextmanager
def atomic_file(path: Path) -> Iterator[Path]:
    """A temporary path next to `path` (same suffix, hidden name) renamed to `path` when the block succeeds.

    A file cut off by a kill keeps its temporary name, so it is never taken for a finished one.
    """
    tmp = path.with_name(f".part-{os.getpid()}-{path.name}")
    try:
        yield tmp
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)


def write_json_atomic(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=False, default=str)
    os.replace(tmp, path)


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)
