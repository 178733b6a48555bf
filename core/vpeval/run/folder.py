"""The run folder: vpeval writes only into folders it created, and one run at a time.

When vpeval creates a run folder (or finds it empty) it writes the marker `.vpeval-run`. A folder
that holds files but no marker belongs to the user and is refused unless the command line says
`--overwrite`. Where the folder may be (an experiment file names one inside the working directory;
the command line names any) is checked when the experiment is loaded, see config.py.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from vpeval.atomic import write_text_atomic
from vpeval.errors import ConfigError
from vpeval.run.locks import file_lock

MARKER = ".vpeval-run"
LOCK = MARKER + ".lock"


def experiment_run_folder(exp: Any) -> Path:
    """The run folder a ResolvedExperiment names: its `output` (inside the working directory) or runs/<name>.

    An experiment file may come from someone else, so it may not send output elsewhere; the command line
    (`--output`) may name any folder.
    """
    value = exp.experiment.output
    if value is not None:
        normal = os.path.normpath(value)
        if "\0" in value or os.path.isabs(value) or normal == os.pardir or normal.startswith(os.pardir + os.sep):
            raise ConfigError(
                f"{exp.source}: `output: {value}` is outside the working directory, and an experiment file may only "
                f"name a run folder inside it; to write there, pass it on the command line as `--output {value}`."
            )
    return exp.output


def claim_run_folder(folder: Path, overwrite: bool = False) -> None:
    """Create `folder` with its marker, or check that vpeval may write into the existing one."""
    try:
        folder.mkdir(parents=True)
    except FileExistsError:
        if not folder.is_dir():
            raise ConfigError(f"The run folder {folder} is a file, not a folder; choose another `output`.") from None
    if (folder / MARKER).is_file():
        return
    # Names starting with the marker's are vpeval's own (the lock, the marker's temporary file).
    foreign = sorted(p.name for p in folder.iterdir() if not p.name.startswith(MARKER))
    if not foreign or _written_before_markers(folder):
        write_text_atomic(folder / MARKER, "This folder was created by vpeval, which may write into it again.\n")
    elif not overwrite:
        raise ConfigError(
            f"The run folder {folder} already holds files vpeval did not write ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}; it has no {MARKER} marker); choose another `output` or "
            "`--output`, or pass --overwrite to write into it anyway."
        )


def _written_before_markers(folder: Path) -> bool:
    """A run folder of a vpeval version without markers: its results.json says vpeval wrote it."""
    try:
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(results, dict) and "vpeval_version" in results and "rows" in results


@contextmanager
def run_folder_lock(folder: Path, quiet: bool = False) -> Iterator[None]:
    """One run at a time writes into a folder; a second one waits for the first to finish."""

    def waiting(holder: str) -> None:
        if not quiet:
            print(f"vpeval: {holder} is writing into {folder}; waiting for it to finish.", file=sys.stderr, flush=True)

    with file_lock(folder / LOCK, waiting):
        yield
