"""Reading a torch checkpoint a user (or a cache) hands over: tensors only, never Python objects.

torch.load(weights_only=True) already refuses pickled objects; this turns its refusal, and the errors of
truncated or foreign files, into one sentence that names the file: for a user's file, what file to give
instead; for a file in a cache entry, which entry to delete or stage to force. torch is imported only
when called.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from vpeval.errors import CorruptCacheError, MissingModelError, cache_entry_of

# Lines of torch's refusal that explain torch, not the file.
_BOILERPLATE = ("Weights only load failed", "Please file an issue", "Check the documentation", "Re-running")


def load_weights_only(path: str | Path, map_location: Any = "cpu") -> Any:
    """The tensors (usually a state dict) stored in `path`, on `map_location` (the CPU by default: a
    plugin moves its module to the run's device after loading); MissingModelError for anything else."""
    import pickle

    import torch

    try:
        return torch.load(Path(path), map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, KeyError, ValueError, AttributeError, TypeError) as exc:
        if cache_entry_of(path) is not None:  # vpeval wrote it: the remedy is recomputing, not another file
            raise CorruptCacheError(str(path), f"not a readable weights-only checkpoint: {_reason(exc)}") from None
        raise MissingModelError(
            f"{path} is not a weights-only checkpoint ({_reason(exc)}); give a file saved with "
            "torch.save(model.state_dict(), ...) from a source you trust."
        ) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the file ends early"
    unsupported = re.search(r"Unsupported global: GLOBAL (\S+)", str(exc))
    if unsupported:  # torch 2.6+: its refusal lists options; what matters is the object the file holds
        return f"it holds a Python object ({unsupported.group(1)}), which is never unpickled"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(_BOILERPLATE) and not line.endswith("error:")]
    if isinstance(exc, KeyError) or not useful:
        return f"unreadable data: {type(exc).__name__}"
    return useful[0].rstrip(".")[:200]
