"""What a corpus file says about an audio file, checked where it can be: the path and the header.

Readers (manifest, Kaldi folder) call these with the line that listed the file, so the sentence names it.

* The path: a Kaldi archive offset or other extended filename (`file.ark:1234`, `-`), a folder, a
  device (/dev/null) or a FIFO is refused with what it is and what to do; a path that does not exist
  is left to the audio scan, which names it (and which `on_bad_audio: skip` may skip).
* Declared values, checked against the file's header (soundfile.info, one header read per file that
  declares any) when the header is readable; an unreadable or missing file is again the scan's:
  - sample_rate: must equal the header's rate (the scan checks it again on the measured file);
  - duration (a manifest's duration_s, utt2dur): must agree with frames / rate within
    DURATION_TOLERANCE_S or DURATION_TOLERANCE (relative), whichever is larger, so rounded values
    (6.01 for 6.0100625 s) pass and 100 s for a 0.5 s file does not. The declared value, not the
    header's, stays in the Utterance (stages key their caches on what they use);
  - channel: must be one of the file's channels.
"""

from __future__ import annotations

import os
import re
import stat

import soundfile as sf

from vpeval.errors import DataError

DURATION_TOLERANCE_S = 0.05
DURATION_TOLERANCE = 0.01
# Kaldi rxfilenames vpeval does not read: `foo.ark:1234`, `foo.ark:1234[0:100]`, `-` (standard input).
_ARK_OFFSET = re.compile(r".+:[0-9]+(?:\[[^\]]*\])?")


def check_listed_path(where: str, written: str, full: str) -> None:
    """Refuse a listed audio path vpeval cannot read as a file, saying what it is; `written` as listed."""
    if written == "-" or written.startswith(("ark:", "scp:", "ark,", "scp,")):
        raise DataError(
            f"{where} names '{written}', a Kaldi extended filename (an archive or standard input), which vpeval does "
            "not read; convert the audio to plain files (with wav-copy or sox) and list those."
        )
    try:
        mode = os.stat(full).st_mode
    except OSError:
        mode = None
    if mode is None and _ARK_OFFSET.fullmatch(written) and _archive(full):
        raise DataError(
            f"{where} names '{written}', a Kaldi archive offset (extended filename), which vpeval does not read; "
            "convert the audio to plain files (for example `wav-copy ark:ARCHIVE.ark:OFFSET out.wav`, or sox) and "
            "list those files."
        )
    if mode is None or stat.S_ISREG(mode):
        return  # a missing file is the audio scan's to name (on_bad_audio may skip it)
    if stat.S_ISDIR(mode):
        what = "a folder"
    elif stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        what = "a device (such as /dev/null)"
    elif stat.S_ISFIFO(mode):
        what = "a named pipe (FIFO)"
    else:
        what = "not a regular file"
    raise DataError(f"{where} names {full}, which is {what}, not an audio file; list the audio file itself.")


def _archive(full: str) -> bool:
    """Whether `full` reads as ARCHIVE:OFFSET: the part before the colon is an .ark name or a file."""
    bare = re.sub(r"\[[^\]]*\]$", "", full)  # a range such as [0:100] after the offset
    archive = bare[: bare.rindex(":")]
    return archive.endswith(".ark") or os.path.isfile(archive)


def check_declared(
    where: str, path: str, sample_rate: int | None = None, duration: float | None = None, channel: int | None = None
) -> None:
    """Refuse declared values the file's header contradicts (see the module docstring)."""
    if sample_rate is None and duration is None and channel is None:
        return
    try:
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            return
        info = sf.info(path)
    except (sf.LibsndfileError, RuntimeError, ValueError, OSError):
        return  # unreadable audio: the scan names it
    if info.samplerate <= 0 or info.frames <= 0:
        return
    if sample_rate is not None and sample_rate != info.samplerate:
        raise DataError(
            f"{where} gives sample_rate {sample_rate}, but the header of {path} says {info.samplerate} Hz; correct "
            "the sample rate or leave it empty."
        )
    if channel is not None and channel >= info.channels:
        raise DataError(
            f"{where} gives channel {channel}, but {path} has {info.channels} channel(s) (numbered from 0); correct "
            "the channel or leave it empty."
        )
    if duration is not None:
        actual = info.frames / info.samplerate
        if abs(duration - actual) > max(DURATION_TOLERANCE_S, DURATION_TOLERANCE * actual):
            raise DataError(
                f"{where} gives the duration {duration:g} s, but {path} lasts {actual:.3f} s by its header; "
                "correct the duration or leave it empty."
            )
