"""File names made from labels and utterance ids, one per distinct text.

Sanitising drops characters (`x/y` and `x y` both become `x_y`) and truncation drops the tail, so a
name that needed either keeps its readable part and adds `~` and a hash of the full text. `~` is never
kept by sanitising, so a name that needed no change cannot equal one that did.
"""

from __future__ import annotations

import hashlib
import re

HASH_MARK = "~"
HASH_HEX = 10  # 40 bits: a collision needs about a million distinct labels in one run folder
UTTERANCE_CHARACTERS = r"A-Za-z0-9._-"
LABEL_CHARACTERS = r"A-Za-z0-9._=+-"


def file_name(text: str, allowed: str = LABEL_CHARACTERS, max_length: int = 180) -> str:
    """`text` with runs of other characters than `allowed` turned into `_`, injective over texts."""
    kept = re.sub(f"[^{allowed}]+", "_", text)
    if kept == text and len(kept) <= max_length and text not in ("", ".", ".."):
        return kept
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_HEX]
    return kept[: max_length - HASH_HEX - 1] + HASH_MARK + digest


def utterance_file(utterance_id: str, suffix: str = ".wav") -> str:
    """The file name of one utterance's output inside a cache entry."""
    return file_name(utterance_id, UTTERANCE_CHARACTERS, 120) + suffix
