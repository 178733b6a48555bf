"""A VoicePrivacy submission's folders repaired as the challenge's toolkit repairs them before scoring.

The toolkit (VPC 2024 commit 400de3a and 2026, utils/prepare_results_in_kaldi_format.py, check_kaldi_formart_data)
copies every file of the original folder that the anonymized copy lacks (utt2spk, spk2gender, text, trials,
enrolls, ...), and builds wav.scp from the copy's own **/*.wav files, keyed by file stem in the original
wav.scp's order, when wav.scp is missing, has another number of lines than the original's, lists an id the
original does not (or twice), or names a file that does not exist. vpeval never writes into the user's data
folder: the repaired folder is a copy in the plugin's work folder (the audio stays where it is), and each repair
is one sentence for the log, "wav.scp built from 1,496 files under data/libri_dev_enrolls_x/".
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from vpeval.errors import DataError

SHOWN = 5


def wav_scp_keys(path: Path) -> list[str]:
    return [line.split()[0] for line in path.read_text(encoding="utf-8").splitlines() if line.split()]


def repair_folder(anonymized: Path, original: Path, work: Path) -> tuple[Path, list[str]]:
    """The folder to read for `anonymized` (itself, or its repaired copy under `work`) and the repairs made."""
    if not original.is_dir():
        return anonymized, []  # nothing to repair from: the folder is read as it is
    copied = sorted(
        p.name for p in original.iterdir() if p.is_file() and p.name != "wav.scp" and not (anonymized / p.name).exists()
    )
    why = _wav_scp_fault(anonymized / "wav.scp", original / "wav.scp")
    if not copied and why is None:
        return anonymized, []
    target = work / anonymized.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    repairs = []
    for entry in anonymized.iterdir():
        if entry.is_file() and entry.name != "wav.scp":
            shutil.copyfile(entry, target / entry.name)
    for name in copied:
        shutil.copyfile(original / name, target / name)
    if copied:
        repairs.append(f"{anonymized}: {', '.join(copied)} copied from {original} (missing), as the toolkit does")
    if why is None:
        _copy_wav_scp(anonymized, target / "wav.scp")
    else:
        count = _build_wav_scp(anonymized, original / "wav.scp", target / "wav.scp")
        repairs.append(
            f"{anonymized}: wav.scp built from {count:,} files under {anonymized}/ ({why}), as the toolkit does"
        )
    return target, repairs


def _wav_scp_fault(anonymized: Path, original: Path) -> str | None:
    """Why the toolkit would rebuild the copy's wav.scp (its checks, in its order), or None."""
    if not anonymized.is_file():
        return "it had no wav.scp"
    if not original.is_file():
        return None
    lines = [line.split() for line in anonymized.read_text(encoding="utf-8").splitlines() if line.split()]
    expected = wav_scp_keys(original)
    if len(lines) != len(expected):
        return f"its wav.scp lists {len(lines):,} utterances, the original's {len(expected):,}"
    remaining = list(expected)
    for fields in lines:
        if fields[0] not in remaining:
            return f"its wav.scp lists {fields[0]} twice or an id the original does not"
        remaining.remove(fields[0])
        piped = " ".join(fields).endswith("|")
        if not piped and len(fields) > 1 and _resolved(fields[1], anonymized.parent) is None:
            return f"its wav.scp names {fields[1]} for {fields[0]}, which is not a file"
    return None


def _resolved(path: str, folder: Path) -> str | None:
    """An existing file's absolute path, a relative one found as the core's Kaldi reader finds it (from the
    folder, the two above it, the working folder); None when it is not a file."""
    if Path(path).is_absolute():
        return path if os.path.isfile(path) else None
    for base in (folder, folder.parent, folder.parent.parent, Path.cwd()):
        if (base / path).is_file():
            return str((base / path).resolve())
    return None


def _copy_wav_scp(folder: Path, target: Path) -> None:
    """The folder's wav.scp in the repaired copy, its relative paths made absolute (the copy lives elsewhere)."""
    lines = []
    for line in (folder / "wav.scp").read_text(encoding="utf-8").splitlines():
        fields = line.split(maxsplit=1)
        if len(fields) == 2 and not fields[1].rstrip().endswith("|"):
            line = f"{fields[0]} {_resolved(fields[1].strip(), folder) or fields[1]}"
        lines.append(line + "\n")
    target.write_text("".join(lines), encoding="utf-8")


def _build_wav_scp(folder: Path, original: Path, target: Path) -> int:
    """wav.scp from folder/**/*.wav by file stem, in the original's order; the number of files it lists."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".wav"):
                found[os.path.splitext(name)[0]] = os.path.abspath(os.path.join(root, name))
    if not found:
        raise DataError(
            f"anonymizer precomputed: {folder} has no usable wav.scp and no .wav files under it; write the anonymized "
            f"audio as {folder}/wav/<utterance-id>.wav (the toolkit's layout) or a wav.scp naming each file."
        )
    keys = wav_scp_keys(original) if original.is_file() else sorted(found)
    missing = [key for key in keys if key not in found]
    if missing:
        first = ", ".join(missing[:SHOWN]) + (", ..." if len(missing) > SHOWN else "")
        raise DataError(
            f"anonymizer precomputed: {folder} has no usable wav.scp, and {len(missing):,} of the {len(keys):,} "
            f"utterances of {original} have no <id>.wav under it (first: {first}); write them there."
        )
    target.write_text("".join(f"{key} {found[key]}\n" for key in keys), encoding="utf-8")
    return len(keys)
