"""Anonymize the real VCTK sentences OUTSIDE vpeval with SoX and write VoicePrivacy's layout.

Stands for a challenge participant's own toolkit: it uses only the Python standard library and the
`sox` command-line tool (apt-get install sox), never vpeval. It writes, under --out (default
runs/vctk-sox-recipe):

    data/vctk_enrolls/      originals, first half of each speaker's sentences (wav.scp, utt2spk, spk2utt)
    data/vctk_trials/       originals, second half, with a `trials` file (every trial utterance against
                            every enrolled speaker: target when it is the same speaker)
    data/vctk_enrolls_sox/  the same ids and speakers, wav.scp pointing at the SoX output of system `sox`
    data/vctk_trials_sox/   likewise, with the same `trials` file
    data/vctk_*_soxpitch/   the same for system `soxpitch`
    wav/<system>/<id>.wav   the anonymized speech, 16 kHz 16-bit

Each utterance gets its own pseudo-voice (VoicePrivacy 2024's utterance level), drawn from a
generator seeded by --seed and the utterance id. System `sox` moves the formants by `speed S tempo 1/S`
(a resampling that keeps the duration) and the pitch by a further `pitch P` cents, both up or both
down; system `soxpitch` moves the pitch only (`pitch` by 1.5 P cents), leaving the formants.
VCTK here has no gender labels, so there is no spk2gender and non-target trials mix genders.

    python scripts/sox_anonymize_vctk.py [--real ../shared/data/real] [--out runs/vctk-sox-recipe] [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import random
import shutil
import subprocess
from pathlib import Path


def pseudo_voice(seed: int, utterance_id: str) -> tuple[float, float]:
    """(formant factor S, extra pitch shift in cents) for one utterance, fixed by seed and id."""
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}/{utterance_id}".encode()).digest()[:8], "little"))
    direction = rng.choice((-1, 1))
    return 1 + direction * rng.uniform(0.08, 0.15), direction * rng.uniform(200, 400)


def sox_effects(system: str, formant: float, cents: float) -> list[str]:
    if system == "sox":
        return ["speed", f"{formant:.4f}", "tempo", "-s", f"{1 / formant:.4f}", "pitch", f"{cents:.0f}"]
    return ["pitch", f"{1.5 * cents:.0f}"]


SYSTEMS = ("sox", "soxpitch")


def sox_anonymize(source: Path, target: Path, effects: list[str]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    # -R: repeatable dither (same files on every run); -G: gain guards against clipping.
    command = ["sox", "-R", "-G", str(source), "-r", "16000", "-b", "16", str(target), *effects, "rate", "-h", "16000"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"sox failed on {source}: {done.stderr.strip()}")


def write_table(path: Path, rows: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{row}\n" for row in sorted(rows)))  # C order, as Kaldi wants


def write_set(folder: Path, utterances: list[tuple[str, str, Path]]) -> None:
    """wav.scp, utt2spk and spk2utt of (id, speaker, audio path) rows."""
    write_table(folder / "wav.scp", [f"{uid} {path}" for uid, _, path in utterances])
    write_table(folder / "utt2spk", [f"{uid} {spk}" for uid, spk, _ in utterances])
    by_speaker: dict[str, list[str]] = {}
    for uid, spk, _ in sorted(utterances):
        by_speaker.setdefault(spk, []).append(uid)
    write_table(folder / "spk2utt", [f"{spk} {' '.join(ids)}" for spk, ids in by_speaker.items()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data" / "real")
    parser.add_argument("--out", type=Path, default=Path("runs/vctk-sox-recipe"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if shutil.which("sox") is None:
        raise SystemExit("sox is not installed; install it (apt-get install sox) and run again.")
    vctk = args.real / "vctk_autovc"
    rows = list(csv.DictReader(open(vctk / "metadata.csv", encoding="utf-8")))
    by_speaker: dict[str, list[tuple[str, str, Path]]] = {}
    for row in rows:
        source = (vctk / row["path"]).resolve()
        by_speaker.setdefault(row["speaker"], []).append((source.stem, row["speaker"], source))
    out = args.out.resolve()
    sets: dict[str, list[tuple[str, str, Path]]] = {"vctk_enrolls": [], "vctk_trials": []}
    for speaker in sorted(by_speaker):
        utterances = sorted(by_speaker[speaker])
        half = len(utterances) // 2
        sets["vctk_enrolls"] += utterances[:half]
        sets["vctk_trials"] += utterances[half:]
    trials = [
        f"{speaker} {uid} {'target' if spk == speaker else 'nontarget'}"
        for speaker in sorted(by_speaker)
        for uid, spk, _ in sets["vctk_trials"]
    ]
    for name, utterances in sets.items():
        write_set(out / "data" / name, utterances)
        for system in SYSTEMS:
            anonymized = []
            for uid, spk, source in utterances:
                target = out / "wav" / system / f"{uid}.wav"
                sox_anonymize(source, target, sox_effects(system, *pseudo_voice(args.seed, uid)))
                anonymized.append((uid, spk, target))
            write_set(out / "data" / f"{name}_{system}", anonymized)
        if name.endswith("trials"):
            for folder in (name, *(f"{name}_{system}" for system in SYSTEMS)):
                write_table(out / "data" / folder / "trials", trials)
    count = sum(len(u) for u in sets.values())
    print(f"{count} VCTK utterances of {len(by_speaker)} speakers anonymized by {', '.join(SYSTEMS)} -> {out / 'data'}")


if __name__ == "__main__":
    main()
