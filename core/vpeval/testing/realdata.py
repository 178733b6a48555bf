"""Where the small real recordings are (FSDD, VCTK sentences): shared/data/real beside the checkout."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "VPEVAL_REAL_DATA"


def real_data_root() -> Path:
    """The folder holding fsdd/ and vctk_autovc/: $VPEVAL_REAL_DATA, else shared/data/real found
    beside the checkout (or above the working directory)."""
    candidates = [Path(os.environ[ENV])] if os.environ.get(ENV) else []
    for start in (Path(__file__).resolve(), Path.cwd().resolve()):
        candidates += [parent / "shared" / "data" / "real" for parent in start.parents]
    candidates.append(Path("/work/shared/data/real"))
    for path in candidates:
        if (path / "fsdd").is_dir():
            return path
    raise FileNotFoundError(
        f"The real recordings (shared/data/real with fsdd/ and vctk_autovc/) were not found; set {ENV} to that folder."
    )
