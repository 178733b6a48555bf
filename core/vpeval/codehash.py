"""The code part of a cache key: a hash of a plugin's source files and of the lib/ libraries it requires.

A stage's cache key holds its plugin's `code_fingerprint`, so editing a plugin (or a library under lib/
that its distribution requires) retires what it computed, and `referenced_code` does the same for the
helper plugins its params name. A built-in plugin's package is vpeval itself: every core file counts.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
import sys
from importlib import metadata
from pathlib import Path

_CODE_HASHES: dict[str, str] = {}


def code_fingerprint(cls: type) -> str:
    """sha256 (16 hex) of the .py files of the top-level package that defines `cls`, and of the vpeval
    library distributions (lib/: WORLD, Praat prosody, espeak-ng) that its distribution requires,
    so an edited library retires what the plugins using it computed."""
    top = cls.__module__.split(".")[0]
    if top not in _CODE_HASHES:
        digest = hashlib.sha256()
        _hash_package(top, digest)
        for library in _library_packages(getattr(cls, "distribution", "")):
            digest.update(f"library:{library}".encode())
            _hash_package(library, digest)
        _CODE_HASHES[top] = digest.hexdigest()[:16]
    return _CODE_HASHES[top]


def referenced_code(cls: type, named: list[type]) -> str:
    """A hash of the code of the plugins `cls`'s params name (an encoder, an ASR, a pool corpus), so
    editing a helper plugin retires what its owner computed with it; "" when it names none."""
    own = code_fingerprint(cls)
    others = sorted({code_fingerprint(other) for other in named} - {own})
    return hashlib.sha256(" ".join(others).encode()).hexdigest()[:16] if others else ""


def _hash_package(top: str, digest) -> None:
    module = sys.modules.get(top) or importlib.import_module(top)
    roots = [Path(p) for p in getattr(module, "__path__", [])] or [Path(module.__file__)]
    for root in roots:
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for f in files:
            digest.update(str(f.relative_to(root) if root.is_dir() else f.name).encode())
            digest.update(f.read_bytes())


def _library_packages(distribution: str) -> list[str]:
    """Top-level packages of the vpeval-* distributions (not the core) that `distribution` requires."""
    try:
        requires = metadata.distribution(distribution).requires or []
    except (metadata.PackageNotFoundError, ValueError):
        return []
    wanted = set()
    for requirement in requires:
        if "extra ==" in requirement:  # test extras are not the plugin's code
            continue
        name = re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        if name.startswith("vpeval-"):
            wanted.add(name)
    return sorted({package for name in wanted for package in _top_level_packages(name)})


@functools.cache
def _top_level_packages(distribution: str) -> list[str]:
    """The packages `distribution` installs, as metadata.packages_distributions finds them (top_level.txt, else
    its .py files), for this one distribution: that function reads every installed one's files (0.15 s a run)."""
    try:
        dist = metadata.distribution(distribution)
    except (metadata.PackageNotFoundError, ValueError):
        return []
    declared = (dist.read_text("top_level.txt") or "").split()
    files = [f for f in dist.files or [] if f.suffix == ".py"]
    return declared or sorted({f.parts[0] if len(f.parts) > 1 else f.with_suffix("").name for f in files})
