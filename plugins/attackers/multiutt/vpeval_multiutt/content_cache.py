"""Small caches: results keyed by an audio file's bytes (never its name), and frames kept in memory."""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


class JsonCache:
    """One JSON file per key under `folder`, written atomically so parallel runs never read half a file."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):  # a damaged entry is recomputed
            return None

    def put(self, key: str, value: Any) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(value))
        temporary.replace(path)


class MemoryCache:
    """Arrays by key up to a byte budget, least recently used out."""

    def __init__(self, budget_mb: int):
        self.budget = budget_mb * 1024 * 1024
        self.used = 0
        self.items: OrderedDict[Any, np.ndarray] = OrderedDict()

    def get(self, key: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
            return value
        value = make()
        if value.nbytes <= self.budget:
            self.items[key] = value
            self.used += value.nbytes
            while self.used > self.budget:
                _, old = self.items.popitem(last=False)
                self.used -= old.nbytes
        return value
