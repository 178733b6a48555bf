"""Per-utterance results (embeddings, feature vectors, transcripts) kept on disk by audio content and extractor.

A result is stored under the hash of the audio file's bytes (and channel) and a string naming
everything else it depends on (the extractor's identity: model weights' digest, parameters,
version). A renamed copy of a file is served from the cache; a changed file or a retrained model
never is. Misses are computed with the run's workers (`PluginContext.map`), and stored only when the
audio file's stat stamp is the same after the computation as when it was hashed (a file replaced
meanwhile would otherwise file the new audio's result under the old bytes' hash). A stored file that
cannot be read back (garbage, cut off) is deleted and recomputed, with a line in the run log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from vpeval.data.fingerprint import FileIndex, file_hash, file_stamp
from vpeval.types import Utterance

_log = logging.getLogger("vpeval.content_cache")
# The run cache's folder of the file-hash index (the runner's data stage and corpus sources fill it).
FINGERPRINT_FOLDER = "fingerprints"


def _damaged(path: Path, exc: Exception) -> None:
    """A stored result that does not read back: say so once and remove it, so it is computed again."""
    _log.warning("content cache file %s was damaged (%s: %s); recomputing it", path, type(exc).__name__, exc)
    path.unlink(missing_ok=True)


def identity_digest(*parts: object) -> str:
    """A short hex digest of an extractor's identity parts (text, bytes or numpy arrays)."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, np.ndarray):
            digest.update(str((part.dtype.str, part.shape)).encode())
            digest.update(np.ascontiguousarray(part).tobytes())
        elif isinstance(part, bytes):
            digest.update(part)
        else:
            digest.update(repr(part).encode())
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


def source_digest(*modules: object) -> str:
    """Digest of the source files of these modules: a code change retires what they computed."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(module.__file__).read_bytes())  # type: ignore[attr-defined]
    return digest.hexdigest()[:32]


class ContentCache:
    """One .npy file per (audio content, extractor) under `root/<extractor>/`."""

    def __init__(self, root: str | os.PathLike, extractor: str):
        self.folder = Path(root) / extractor

    def path(self, utterance: Utterance, content: str | None = None) -> Path:
        """Where the result for this utterance's audio goes; `content`: its file hash, when known."""
        content = file_hash(utterance.path) if content is None else content
        name = content if utterance.channel is None else f"{content}-ch{utterance.channel}"
        return self.folder / name[:2] / f"{name}.npy"

    def get(self, utterance: Utterance) -> np.ndarray | None:
        return self.load(self.path(utterance))

    @staticmethod
    def load(path: Path) -> np.ndarray | None:
        """The stored array, or None when absent or damaged (then removed, with a log line)."""
        try:
            return np.load(path, allow_pickle=False)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, EOFError) as exc:  # garbage or cut off: recompute
            _damaged(path, exc)
            return None

    def put(self, utterance: Utterance, value: np.ndarray, path: Path | None = None) -> None:
        path = self.path(utterance) if path is None else path
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        np.save(temporary, np.asarray(value))
        temporary.replace(path)  # atomic: parallel workers and runs never read a partial file


def cached_map(
    context,
    utterances: Sequence[Utterance],
    extractor: str,
    compute: Callable[[Utterance], np.ndarray],
    description: str = "",
) -> list[np.ndarray]:
    """compute(u) for every utterance, from the content cache where present, else with the run's workers.

    `context` is the plugin's PluginContext; its options' cache_root (set by the runner) holds the
    cache. Without one (a plugin used outside a run) nothing is stored, but the work is still parallel.
    """
    root = context.options.get("cache_root")
    cache = ContentCache(Path(root) / "content", extractor) if root else None
    # Each file's stamp before it is hashed: a result is stored only if the file still has it afterwards.
    stamps = [file_stamp(u.path) if cache else None for u in utterances]
    paths = _paths(cache, root, utterances)
    out: list[np.ndarray | None] = [ContentCache.load(p) if p is not None else None for p in paths]
    missing = [i for i, value in enumerate(out) if value is None]

    def work(index: int) -> np.ndarray:
        value = np.asarray(compute(utterances[index]))
        if cache is not None and stamps[index] is not None and file_stamp(utterances[index].path) == stamps[index]:
            cache.put(utterances[index], value, paths[index])
        return value

    for index, value in zip(missing, context.map(work, missing, description)):
        out[index] = value
    return out  # type: ignore[return-value]


def cached_batches(
    context,
    utterances: Sequence[Utterance],
    extractor: str,
    compute_batch: Callable[[Sequence[Utterance]], Sequence[np.ndarray]],
    batch_size: int,
    description: str = "",
) -> list[np.ndarray]:
    """As `cached_map`, but the misses are computed in this process, `batch_size` utterances per
    `compute_batch` call: torch work on a GPU runs batched here, never in forked workers."""
    root = context.options.get("cache_root")
    cache = ContentCache(Path(root) / "content", extractor) if root else None
    stamps = [file_stamp(u.path) if cache else None for u in utterances]
    paths = _paths(cache, root, utterances)
    out: list[np.ndarray | None] = [ContentCache.load(p) if p is not None else None for p in paths]
    missing = [i for i, value in enumerate(out) if value is None]
    starts = context.progress(range(0, len(missing), max(1, batch_size)), description=description)
    for start in starts:
        chunk = missing[start : start + max(1, batch_size)]
        for index, value in zip(chunk, compute_batch([utterances[i] for i in chunk]), strict=True):
            value = np.asarray(value)
            out[index] = value
            if cache is not None and stamps[index] is not None and file_stamp(utterances[index].path) == stamps[index]:
                cache.put(utterances[index], value, paths[index])
    return out  # type: ignore[return-value]


def _paths(cache: ContentCache | None, root, utterances: Sequence[Utterance]) -> list[Path | None]:
    """Each utterance's cache file. The audio's hash comes from the run's fingerprint index (the folder the
    runner's data stage fills: `cache_root/fingerprints`), so a file fingerprinted before is only stat'ed
    (its size, times and inode unchanged) instead of read whole again at every extractor's look-up; files
    new to the index are hashed once and remembered there. The hashes are the same either way."""
    if cache is None:
        return [None] * len(utterances)
    index = FileIndex(Path(root) / FINGERPRINT_FOLDER)
    try:
        return [cache.path(u, index.file_hash(u.path)) for u in utterances]
    finally:
        index.close()


def cache_key(*parts: object) -> str:
    """A key for `JsonCache`: sha256 of the parts' text (for example a file hash and the settings)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


class JsonCache:
    """One JSON value per key under `folder` (transcripts, feature rows), for values that are not arrays.

    Keys are made with `cache_key` from the audio file's content hash (`vpeval.data.fingerprint.file_hash`)
    and whatever settings change the result, never from file names, so a changed file is never served stale.
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"  # two-character fan-out keeps folders small

    def get(self, key: str):
        path = self._path(key)
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # garbage or cut off: recompute
            _damaged(path, exc)
            return None

    def put(self, key: str, value) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(value))
        temporary.replace(path)  # atomic: parallel workers and runs never read a partial file
