"""Split a Kaldi data folder into VoicePrivacy-style enrollment and trial folders, for the kaldi corpus's
`evaluation` entries (experiments/paper-scale/seed002-*.yaml: VoxCeleb1-test and VoxCeleb2-test).

    python scripts/kaldi_trial_folders.py DATA/voxceleb1_test [--enrolls 1]

writes DATA/voxceleb1_test_enrolls (each speaker's first `--enrolls` utterances, by sorted id) and
DATA/voxceleb1_test_trials (the others, with a `trials` file: every enrolled speaker against every trial
utterance, `speaker utterance target|nontarget`, as the VoicePrivacy folders have it). wav.scp lines are
copied as they are; utt2spk and spk2gender are kept for the utterances and speakers of each folder. With
the evaluation folders given this way, the kaldi corpus trains attackers on its `attacker_train` folder
only, and every utterance of the split folder is in the evaluation (so a trial list over it, such as
VoxCeleb1-O, finds each one). Existing output folders are refused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _table(path: Path) -> list[tuple[str, str]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            key, _, value = line.strip().partition(" ")
            if not value:
                sys.exit(f"{path}:{number}: a line is 'key value'; fix the line.")
            rows.append((key, value.strip()))
    return rows


def _write(folder: Path, name: str, lines: list[str]) -> None:
    (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def split(source: Path, enrolls_per_speaker: int) -> tuple[Path, Path]:
    for name in ("wav.scp", "utt2spk"):
        if not (source / name).is_file():
            sys.exit(f"{source} has no {name}; give a Kaldi data folder.")
    wav = dict(_table(source / "wav.scp"))
    utt2spk = sorted(_table(source / "utt2spk"))
    genders = dict(_table(source / "spk2gender")) if (source / "spk2gender").is_file() else {}
    by_speaker: dict[str, list[str]] = {}
    for utt, spk in utt2spk:
        by_speaker.setdefault(spk, []).append(utt)
    few = [spk for spk, utts in by_speaker.items() if len(utts) <= enrolls_per_speaker]
    if few:
        sys.exit(f"speaker {few[0]} of {source} has {enrolls_per_speaker} utterance(s) or fewer: nothing left to test.")
    enrolls = {spk: utts[:enrolls_per_speaker] for spk, utts in by_speaker.items()}
    tests = [(utt, spk) for spk, utts in by_speaker.items() for utt in utts[enrolls_per_speaker:]]
    folders = (source.with_name(source.name + "_enrolls"), source.with_name(source.name + "_trials"))
    for folder in folders:
        if folder.exists():
            sys.exit(f"{folder} exists; remove it first.")
    parts = ([(u, s) for s, utts in enrolls.items() for u in utts], tests)
    for folder, items in zip(folders, parts, strict=True):
        folder.mkdir()
        items = sorted(items)
        _write(folder, "wav.scp", [f"{u} {wav[u]}" for u, _ in items])
        _write(folder, "utt2spk", [f"{u} {s}" for u, s in items])
        speakers = sorted({s for _, s in items})
        if genders:
            _write(folder, "spk2gender", [f"{s} {genders[s]}" for s in speakers if s in genders])
    _write(
        folders[1],
        "trials",
        [f"{spk} {utt} {'target' if owner == spk else 'nontarget'}" for spk in sorted(enrolls) for utt, owner in tests],
    )
    return folders


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the Kaldi data folder to split")
    parser.add_argument("--enrolls", type=int, default=1, help="enrollment utterances per speaker (default 1)")
    args = parser.parse_args(argv)
    if args.enrolls < 1:
        sys.exit("--enrolls is at least 1.")
    for folder in split(args.folder, args.enrolls):
        print(folder)


if __name__ == "__main__":
    main()
