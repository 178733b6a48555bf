"""The VoicePrivacy Challenges' data-folder names, as their evaluation configs list them.

VPC 2024 (configs/eval_pre.yaml, eval_post.yaml) and VPC 2026 Track 1 evaluate `libri_dev` and `libri_test`:
an `_enrolls` folder and trial folders per set (2024: `_trials_f` and `_trials_m`; 2026: the gender-mixed
`_trials_mixed`), utility on `IEMOCAP_dev` / `IEMOCAP_test`, and the semi-informed attacker trains on
`train-clean-360`. A system's anonymized copy of each folder has the folder's name plus the system's suffix
(`libri_dev_enrolls_B3`), the same utterance ids, and a wav.scp pointing at the anonymized audio.

VPC 2026 Track 2 (configs/track2/eval_pre.yaml, eval_post_<lang>.yaml at e6810a4) evaluates the MLS sets
`<lang>_dev` / `<lang>_test` for en, de, fr, es (gender-mixed trials), emotion on `emodata_track2_dev` /
`_test`, and trains one semi-informed attacker per language on `train_english`, `train_german`,
`train_french` or `train_spanish`. Its anonymization configs also write `cn_dev`, `cn_test`, `ja_dev`,
`ja_test` (AISHELL and JVS), which that eval_pre.yaml does not evaluate; they can be named in `datasets`.
"""

from __future__ import annotations

from dataclasses import dataclass

TRIAL_SUFFIXES = {"gender": ("_trials_f", "_trials_m"), "mixed": ("_trials_mixed",)}


@dataclass(frozen=True)
class Challenge:
    datasets: tuple[str, ...]
    trials: str  # a key of TRIAL_SUFFIXES
    utility: tuple[str, ...]
    train: str


CHALLENGES = {
    "2024": Challenge(("libri_dev", "libri_test"), "gender", ("IEMOCAP_dev", "IEMOCAP_test"), "train-clean-360"),
    "2026-track1": Challenge(("libri_dev", "libri_test"), "mixed", ("IEMOCAP_dev", "IEMOCAP_test"), "train-clean-360"),
    "2026-track2": Challenge(
        tuple(f"{lang}_{split}" for lang in ("en", "de", "fr", "es") for split in ("dev", "test")),
        "mixed",
        ("emodata_track2_dev", "emodata_track2_test"),
        "train_english",
    ),
}
# Track 2's semi-informed attacker per language (eval_post_<lang>.yaml, e6810a4): its training folder, epochs
# and output layer size (out_n_neurons, the folder's speaker count); batch 32 and lr 0.01 for all.
TRACK2_LANGUAGES = {
    "en": ("train_english", 4, 3930),
    "de": ("train_german", 10, 176),
    "fr": ("train_french", 10, 142),
    "es": ("train_spanish", 10, 86),
}
TRACK2_EXTRA_SETS = ("cn_dev", "cn_test", "ja_dev", "ja_test")


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
