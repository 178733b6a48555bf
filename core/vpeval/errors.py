"""Errors a user can cause. Each carries one sentence that says what is wrong and what to do.

The CLI turns any `UserError` into that sentence on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class UserError(Exception):
    """A problem with the user's input (files, experiment, plugins, models), not a bug in vpeval."""

    exit_code = 2


class ConfigError(UserError):
    """The experiment file is invalid (YAML syntax, schema or a plugin's parameters)."""


class PluginError(UserError):
    """A plugin is unknown, broken, or registered twice."""


class BadAudioError(UserError):
    """An audio file is unreadable, empty or corrupt."""

    def __init__(self, path: str, reason: str):
        self.path = str(path)
        self.reason = reason
        entry = cache_entry_of(self.path)
        remedy = (
            ""
            if entry is None
            else (
                f" It is a file of vpeval's cache (the {entry.stage} stage), not one of yours: delete the cache entry "
                f"folder {entry.folder} or rerun with `--force {entry.stage}`, and vpeval computes it again."
            )
        )
        super().__init__(f"Audio file {self.path} cannot be used: {reason}.{remedy}")

    def __reduce__(self):
        # Raised in a forked worker, it travels back pickled: rebuilt from its args (the one message) it
        # failed to unpickle and the pool reported a crashed worker instead of this sentence.
        return type(self), (self.path, self.reason)


class CorruptCacheError(UserError):
    """A file in vpeval's cache is damaged: the sentence says which entry to delete or which stage to force."""

    def __init__(self, path: str, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(corrupt_cache_message(path, reason) or f"{path} is damaged ({reason}); delete it and rerun.")

    def __reduce__(self):  # pickled back from a worker: rebuilt from its arguments (see BadAudioError)
        return type(self), (self.path, self.reason)


class DataError(UserError):
    """A data folder, manifest or trial list is malformed."""


class MissingModelError(UserError):
    """A model a plugin needs is not where the user said, or its package is not installed."""


class MetricInputError(UserError):
    """Scores or labels a metric cannot work with (one class only, NaN, all equal)."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """ "; did you mean 'anonymizer'?" when a choice is close to `word`, else "" (for unknown-name sentences)."""
    close = difflib.get_close_matches(str(word), list(choices), n=2, cutoff=0.6)
    return "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else ""


# -- cache files ----------------------------------------------------------------------------------
# Stage outputs live in cache entries `<cache>/<stage>/<kk>/<key>/` (`kk` the key's first two of 64 hex
# characters; `<key>.partial` while a stage fills it), see vpeval.run.cache. The shape of a path alone
# says whether a file lies in one, so every reader (torchload, audio) can tell a cache file from a
# user's file, and word the remedy, without being told where the cache is.

_KEY = re.compile(r"[0-9a-f]{64}(\.partial)?")


@dataclass(frozen=True)
class CacheEntry:
    stage: str
    folder: Path


def cache_entry_of(path: str | Path) -> CacheEntry | None:
    """The cache entry folder holding `path` (or being it), or None for a file outside any cache."""
    for folder in [Path(path), *Path(path).parents]:
        if _KEY.fullmatch(folder.name) and folder.parent.name == folder.name[:2] and folder.parent.parent.name:
            return CacheEntry(folder.parent.parent.name, folder)
    return None


def corrupt_cache_message(path: str | Path, reason: str) -> str | None:
    """The sentence for a damaged cache file: what it is, and how to make vpeval compute it again.

    None when `path` is not in a cache entry (then the file is the user's and the caller says so).
    """
    entry = cache_entry_of(path)
    if entry is None:
        return None
    return (
        f"{path} is a file of vpeval's cache (the {entry.stage} stage), not one of yours, and it is damaged "
        f"({reason}); delete the cache entry folder {entry.folder} or rerun with `--force {entry.stage}`, "
        "and vpeval computes it again."
    )
