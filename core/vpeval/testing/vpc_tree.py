"""A VoicePrivacy-layout data folder from the small real recordings, for tests and the VPC recipes' demo.

VCTK's four speakers (p225 and p228 female, p226 and p227 male) play libri_dev (their first five
sentences) and libri_test (the last five), with two FSDD speakers each (male, spoken digits: the sets'
transcripts, for WER): per set, two enrollment utterances per speaker, the other three as trials, with
`_trials_f`, `_trials_m` and the gender-mixed `_trials_mixed` lists (every enrolled speaker, of the folder's
gender, against every trial utterance of the folder). FSDD's other two speakers play train-clean-360. Each folder also
gets an "anonymized" copy with `suffix`: the audio played faster (a resampling that shifts pitch and
formants; no serious anonymizer, but different speech with the same ids), as a submission would write it.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from vpeval import audio as audio_io
from vpeval.testing.realdata import real_data_root

VCTK_GENDER = {"p225": "f", "p226": "m", "p227": "m", "p228": "f"}
SETS = {"libri_dev": slice(0, 5), "libri_test": slice(5, 10)}
FSDD_SPEAKERS = {"libri_dev": ("george", "jackson"), "libri_test": ("lucas", "nicolas"), "train": ("theo", "yweweler")}
ENROLLS_PER_SPEAKER = 2
GENDERS = {**VCTK_GENDER, **{s: "m" for speakers in FSDD_SPEAKERS.values() for s in speakers}}


def _metadata(folder: Path) -> list[dict[str, str]]:
    with open(folder / "metadata.csv", newline="") as f:
        return list(csv.DictReader(f))


def _write_folder(
    folder: Path, utterances: list[tuple[str, str, Path]], genders: dict[str, str], texts: dict[str, str]
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "wav.scp").write_text("".join(f"{u} {p}\n" for u, _, p in utterances))
    (folder / "text").write_text("".join(f"{u} {texts[u]}\n" for u, _, _ in utterances if u in texts))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s, _ in utterances))
    speakers = sorted({s for _, s, _ in utterances})
    (folder / "spk2gender").write_text("".join(f"{s} {genders[s]}\n" for s in speakers))


def _trials(enrolls: list[tuple[str, str, Path]], tests: list[tuple[str, str, Path]], gender: str | None) -> str:
    """VPC's trial lists: each enrolled speaker (of the folder's gender, for _f / _m) against every test utterance."""
    speakers = sorted({s for _, s, _ in enrolls if gender is None or GENDERS[s] == gender})
    return "".join(f"{spk} {u} {'target' if s == spk else 'nontarget'}\n" for spk in speakers for u, s, _ in tests)


def _faster(source: Path, target: Path, ratio: float = 1.15) -> None:
    samples, rate = audio_io.read_audio(str(source))
    shifted = audio_io.resample(samples, int(round(rate * ratio)), rate)  # played at `ratio` x speed
    audio_io.write_audio(target, np.asarray(shifted, dtype=np.float32), rate)


def build_vpc_tree(root: Path, suffix: str = "_fast", train_per_speaker: int = 30) -> Path:
    """Write the data folders under root/data and return that folder."""
    real = real_data_root()
    data = Path(root) / "data"
    anon_audio = Path(root) / "anon_wav"
    anon_audio.mkdir(parents=True, exist_ok=True)
    vctk, fsdd = real / "vctk_autovc", real / "fsdd"
    by_speaker: dict[str, list[tuple[str, str, Path]]] = {}
    texts: dict[str, str] = {}
    for root_folder in (vctk, fsdd):
        for row in sorted(_metadata(root_folder), key=lambda r: r["path"]):
            utt = Path(row["path"]).stem
            by_speaker.setdefault(row["speaker"], []).append((utt, row["speaker"], root_folder / row["path"]))
            if row["transcript"]:
                texts[utt] = row["transcript"].upper()
    folders: dict[str, list[tuple[str, str, Path]]] = {}
    for name, part in SETS.items():
        enrolls, tests = [], []
        for speaker in [*sorted(VCTK_GENDER), *FSDD_SPEAKERS[name]]:
            items = by_speaker[speaker][part] if speaker in VCTK_GENDER else by_speaker[speaker][::100][:5]
            enrolls += items[:ENROLLS_PER_SPEAKER]
            tests += items[ENROLLS_PER_SPEAKER:]
        folders[f"{name}_enrolls"] = enrolls
        for gender in ("f", "m"):
            folders[f"{name}_trials_{gender}"] = [t for t in tests if GENDERS[t[1]] == gender]
        folders[f"{name}_trials_mixed"] = tests
    step = max(1, 500 // train_per_speaker)  # spread over the ten digits
    folders["train-clean-360"] = [u for s in FSDD_SPEAKERS["train"] for u in by_speaker[s][::step][:train_per_speaker]]
    for name, utterances in folders.items():
        for folder, items in ((name, utterances), (name + suffix, None)):
            if items is None:  # the anonymized copy: the same ids, other audio
                items = []
                for u, s, p in utterances:
                    target = anon_audio / f"{u}.wav"
                    if not target.exists():
                        _faster(p, target)
                    items.append((u, s, target))
            _write_folder(data / folder, items, GENDERS, texts)
            if "_trials_" in name:
                enroll_name = name.split("_trials_")[0] + "_enrolls"
                gender = {"f": "f", "m": "m"}.get(name.rsplit("_", 1)[1])
                (data / folder / "trials").write_text(_trials(folders[enroll_name], utterances, gender))
    return data


IEMOCAP_EMOTIONS = ("neu", "ang", "hap", "sad")  # utt2emo labels as VPC's IEMOCAP folders and the classifiers use them


def add_iemocap(data: Path, suffix: str = "_fast") -> Path:
    """IEMOCAP_dev / IEMOCAP_test (and their `suffix` copies) in VPC's layout (utt2emo, spk2fold over two folds,
    speakers numbered in sorted order) over libri_{dev,test}_trials_mixed's speech under new utterance and speaker
    ids: a stand-in with the toolkit's files (tiny classifiers' predictions on it mean nothing). Returns `data`."""
    for source, target in (("libri_dev_trials_mixed", "IEMOCAP_dev"), ("libri_test_trials_mixed", "IEMOCAP_test")):
        for copy in ("", suffix):
            src, dst = data / (source + copy), data / (target + copy)
            dst.mkdir()
            for name in ("wav.scp", "utt2spk", "text"):
                lines = [line.split(maxsplit=1) for line in (src / name).read_text().splitlines()]
                if name == "utt2spk":
                    lines = [[u, f"Ses_{s}"] for u, s in lines]
                (dst / name).write_text("".join(f"iemo_{u} {v}\n" for u, v in lines))
            genders = sorted(line.split() for line in (src / "spk2gender").read_text().splitlines())
            (dst / "spk2gender").write_text("".join(f"Ses_{s} {g}\n" for s, g in genders))
            utts = [line.split()[0] for line in (src / "utt2spk").read_text().splitlines()]
            (dst / "utt2emo").write_text("".join(f"iemo_{u} {IEMOCAP_EMOTIONS[i % 4]}\n" for i, u in enumerate(utts)))
            (dst / "spk2fold").write_text("".join(f"Ses_{s} {1 + i % 2}\n" for i, (s, _) in enumerate(genders)))
    return data
