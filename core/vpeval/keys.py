"""Numbers derived from text keys: the one place where a seed and keys become a random generator.

Every random draw of a run comes from `keyed_rng(seed, *keys)` (a plugin's `context.rng`, a voice's
pseudo-speaker, the speaker splits and trial sides), so a draw depends on the experiment seed and on
what it is for (a speaker id, a step number), never on the order in which things were drawn.
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_int(*parts: object) -> int:
    """A 63-bit integer that depends only on the parts' text (Python's hash() changes per process)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def keyed_rng(seed: int, *keys: object) -> np.random.Generator:
    """A generator fixed by the seed's low 32 bits and the keys' text."""
    return np.random.default_rng([seed & 0xFFFFFFFF, stable_int(*keys)])
