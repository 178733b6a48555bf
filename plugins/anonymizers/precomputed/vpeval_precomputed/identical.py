"""Submitted files that are the original audio itself: a submission that did not anonymize them.

Scored, such files look like a system that hides nothing, with no word of why; `identical_note` counts
them so the run says so. Files are compared byte for byte (filecmp stops at the first differing block,
so different files cost one block each), after the cheap tests: the same file, then the same size.
"""

from __future__ import annotations

import filecmp
import os
from collections.abc import Iterable

from vpeval.types import Utterance

SHOWN = 3


def identical_files(pairs: Iterable[tuple[Utterance, Utterance]]) -> list[tuple[str, str, str]]:
    """(utterance id, original path, submitted path) of each pair whose files hold the same bytes."""
    same = []
    for original, submitted in pairs:
        try:
            if os.path.getsize(original.path) != os.path.getsize(submitted.path):
                continue
            if os.path.samefile(original.path, submitted.path) or filecmp.cmp(
                original.path, submitted.path, shallow=False
            ):
                same.append((original.id, original.path, submitted.path))
        except OSError:
            continue  # a missing or unreadable file is named by the checks that read it
    return same


def identical_note(pairs: list[tuple[Utterance, Utterance]]) -> str | None:
    """One sentence when some submitted files are their originals, byte for byte; None otherwise."""
    same = identical_files(pairs)
    if not same:
        return None
    first = "; ".join(f"{uid}: {submitted} = {original}" for uid, original, submitted in same[:SHOWN])
    share = "all" if len(same) == len(pairs) else f"{len(same)} of the {len(pairs)}"
    return (
        f"precomputed: {share} submitted files are byte-identical to their original audio ({first}), so those "
        "utterances are not anonymized and score as a system that hides nothing; check that the submission's "
        "folders hold the system's output"
    )
