"""The stage cache's folders as `vpeval cache` sees them: each entry's stage, key, size, note and last use.

The layout (vpeval.run.cache): `<root>/<stage>/<key[:2]>/<key>` is a finished entry, `<key>.partial` a
build a killed run left to resume, `<key>.damaged` an entry moved aside, `.<key>.<random>` a build in
progress (or a killed one's). Beside them: `<key>.lock`, `<key>.about.json` (the note vpeval writes when it
builds an entry: stage, label, plugins, build seconds, created; its mtime is the last build or reuse) and
`<key>.verified.json`. Everything else under the root (`work/`: plugins' work folders, generated corpora;
`fingerprints/`) is not an entry: it is sized, never pruned.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpeval.run.cache import ABOUT, ENTRY_MANIFEST, STAGES

_NAME = re.compile(r"^(?P<tmp>\.)?(?P<key>[0-9a-f]{64})(?P<rest>\..+)?$")
UNKNOWN = "unknown"  # what an entry built before notes existed shows for its plugins and times


@dataclass
class Entry:
    stage: str
    key: str
    path: Path
    state: str  # "entry", "partial", "damaged" or "temporary"
    size: int
    note: dict[str, Any] | None
    last_used: float  # seconds since the epoch: the note's mtime, else the entry's own

    @property
    def plugins(self) -> str:
        plugins = (self.note or {}).get("plugins")
        return ", ".join(plugins) if isinstance(plugins, list) and plugins else UNKNOWN


def cache_root(folder: str | Path | None) -> Path:
    """The folder given, else the run's default ($VPEVAL_CACHE or .vpeval-cache)."""
    from vpeval.run.runner import default_cache_root

    return Path(folder) if folder else default_cache_root()


def folder_size(path: Path) -> int:
    """Bytes of the files under `path`, links not followed (a link counts as itself)."""
    total = 0
    for directory, _folders, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:  # removed meanwhile
                pass
    return total


def read_note(folder: Path, key: str) -> dict[str, Any] | None:
    try:
        note = json.loads((folder / (key + ABOUT)).read_text())
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) else None


def _last_used(path: Path, key: str) -> float:
    for candidate in (path.parent / (key + ABOUT), path / ENTRY_MANIFEST, path):
        try:
            return candidate.stat().st_mtime
        except OSError:
            continue
    return 0.0


def scan(root: Path) -> list[Entry]:
    """Every entry folder under the stage folders of `root` (links are skipped: never followed)."""
    out = []
    for stage in STAGES:
        for shard in sorted(p for p in (root / stage).glob("??") if p.is_dir() and not p.is_symlink()):
            for path in sorted(shard.iterdir()):
                match = _NAME.match(path.name)
                if match is None or path.is_symlink() or not path.is_dir():
                    continue  # locks, notes, anything vpeval did not make
                key, rest = match["key"], match["rest"]
                if match["tmp"]:
                    state = "temporary"
                elif rest in (None, ".partial", ".damaged"):
                    state = "entry" if rest is None else rest[1:]
                else:
                    continue
                note = read_note(shard, key) if state == "entry" else None
                out.append(Entry(stage, key, path, state, folder_size(path), note, _last_used(path, key)))
    return out


def human(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def sizes_text(root: Path) -> str:
    """`vpeval cache`: entries and bytes by stage and by the plugins that made them, then the other folders."""
    if not root.is_dir():
        return f"The cache {root} does not exist yet (a run creates it)."
    groups: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for entry in scan(root):
        what = entry.plugins if entry.state == "entry" else f"({entry.state} builds)"
        groups[(entry.stage, what)][0] += 1
        groups[(entry.stage, what)][1] += entry.size
    order = sorted(groups, key=lambda group: (STAGES.index(group[0]), group[1].startswith("("), group[1]))
    rows = [(stage, what, str(groups[(stage, what)][0]), human(groups[(stage, what)][1])) for stage, what in order]
    others = sorted(p for p in root.iterdir() if p.name not in STAGES)
    rows += [("-", f"{p.name}/ (not entries; never pruned)", "-", human(folder_size(p))) for p in others]
    total = sum(size for _, size in groups.values()) + sum(folder_size(p) for p in others)
    lines = [f"cache {root}: {human(total)}"]
    header = ("stage", "plugins", "entries", "size")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for row in [header, *rows]:
        lines.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    if any(what == UNKNOWN for _, what in groups):
        lines.append(f"'{UNKNOWN}': entries built before vpeval recorded which plugins made them.")
    return "\n".join(lines)
