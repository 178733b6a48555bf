"""The VoicePrivacy Challenges' data-folder names, as their evaluation configs list them.

VPC 2024 (configs/eval_pre.yaml, eval_post.yaml) and VPC 2026 Track 1 evaluate `libri_dev` and `libri_test`:
an `_enrolls` folder and trial folders per set (2024: `_trials_f` and `_trials_m`; 2026: the gender-mixed
`_trials_mixed`), utility on `IEMOCAP_dev` / `IEMOCAP_test`, and the semi-informed attacker trains on
`train-clean-360`. A system's anonymized copy of each folder has the folder's name plus the system's suffix
(`libri_dev_enrolls_B3`), the same utterance ids, and a wav.scp pointing at the anonymized audio.
VPC 2026 Track 2 (track2/eval_pre.yaml, e6810a4): MLS `<lang>_dev` / `_test`, emodata_track2, train_<language>.
"""

from __future__ import annotations

from dataclasses import dataclass

TRIAL_SUFFIXES = {"gender": ("_trials_f", "_trials_m"), "mixed": ("_trials_mixed",)}
MLS = tuple(f"{lang}_{split}" for lang in ("en", "de", "fr", "es") for split in ("dev", "test"))


@dataclass(frozen=True)
class Challenge:
    datasets: tuple[str, ...]
    trials: str  # a key of TRIAL_SUFFIXES
    utility: tuple[str, ...]
    train: str


CHALLENGES = {
    "2024": Challenge(("libri_dev", "libri_test"), "gender", ("IEMOCAP_dev", "IEMOCAP_test"), "train-clean-360"),
    "2026-track1": Challenge(("libri_dev", "libri_test"), "mixed", ("IEMOCAP_dev", "IEMOCAP_test"), "train-clean-360"),
    "2026-track2": Challenge(MLS, "mixed", ("emodata_track2_dev", "emodata_track2_test"), "train_english"),
}


def enrolls_folder(dataset: str) -> str:
    return f"{dataset}_enrolls"


def trial_folders(dataset: str, trials: str) -> list[str]:
    return [dataset + suffix for suffix in TRIAL_SUFFIXES[trials]]


def evaluation_folders(datasets: list[str], trials: str) -> list[str]:
    """Every enrollment and trial folder of the sets, in the challenge's order."""
    return [name for d in datasets for name in (enrolls_folder(d), *trial_folders(d, trials))]


def anonymized(folders: list[str], suffix: str) -> list[str]:
    """The anonymized copies' folder names (`libri_dev_enrolls` + `_B3`)."""
    return [folder + suffix for folder in folders]
