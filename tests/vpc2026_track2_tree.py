"""A tree in the VPC 2026 toolkit's Track 2 layout, for the tests that run experiments/vpc2026-track2.yaml
(tests/test_vpc2026_track2.py, tests/test_vpc2026_track2_script.py).

Per language: data/<lang>_{dev,test}_{enrolls,trials_mixed} (the trial folder is also the toolkit's ASR set: its
<lang>_dev_asr joins the trial folders), the whole-set folders <lang>_dev / <lang>_test, the training folder;
emodata_track2_dev / _test; each with its `_fast` "submission" copy; exp/asv_ssl, exp/openai/whisper-large-v3 and
exp/ser_emotion2vec as tiny random-weight models. The speech is vpeval.testing.vpc_tree's small real recordings
under Track 2's folder names (every language the same speech); the numbers mean nothing, the wiring is tested.
"""

from __future__ import annotations

import shutil
from pathlib import Path

SUFFIX = "_fast"
EMOTIONS = ("neu", "ang", "hap", "sad")  # utt2emo labels as the toolkit's emodata_track2 folders give them


def build_track2_tree(
    root: Path, work: Path, languages: tuple[tuple[str, str], ...] = (("de", "train_german"),)
) -> Path:
    """The whole tree under `root` for `languages` ((lang, training folder) pairs); `work` holds the VPC-layout
    source tree and the WavLM; returns the WavLM of the SSL stream (the recipe's SSL_MODEL)."""
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_emotion2vec.tiny import tiny_folder
    from vpeval_speech.tiny_whisper import tiny_whisper_folder
    from vpeval_speechbrain.tiny import write_asv_ssl_folder

    libri = work / "libri"
    build_vpc_tree(libri, suffix=SUFFIX, train_per_speaker=6)
    track2_data(libri / "data", root / "data", languages)
    _, wavlm = write_asv_ssl_folder(root / "exp" / "asv_ssl", work / "wavlm")
    tiny_whisper_folder(root / "exp" / "openai" / "whisper-large-v3")
    tiny_folder(root / "exp" / "ser_emotion2vec")
    return wavlm


def track2_data(libri: Path, data: Path, languages: tuple[tuple[str, str], ...], suffix: str = SUFFIX) -> None:
    """Track 2's folder names from a VPC-layout data folder, per (lang, training folder): <lang>_{dev,test}_
    {enrolls,trials_mixed}, the whole-set folders <lang>_dev / <lang>_test (enrolls and trials together, as the
    toolkit's data preparation leaves them beside the split), the training folder; each with its `suffix` copy."""
    data.mkdir(parents=True)
    for lang, train in languages:
        for split in ("dev", "test"):
            for copy in ("", suffix):
                parts = []
                for kind in ("enrolls", "trials_mixed"):
                    source = libri / f"libri_{split}_{kind}{copy}"
                    shutil.copytree(source, data / f"{lang}_{split}_{kind}{copy}")
                    parts.append(source)
                whole = data / f"{lang}_{split}{copy}"
                whole.mkdir()
                for name in ("wav.scp", "text", "utt2spk", "spk2gender"):
                    lines = dict.fromkeys(line for p in parts for line in (p / name).read_text().splitlines())
                    (whole / name).write_text("".join(f"{line}\n" for line in lines))
        for copy in ("", suffix):
            shutil.copytree(libri / f"train-clean-360{copy}", data / f"{train}{copy}")
    emodata(libri, data, suffix)


def emodata(libri: Path, data: Path, suffix: str) -> None:
    """emodata_track2_dev / _test (and copies): the trial speech under new utterance and speaker ids, with utt2emo
    (a stand-in: the tiny evaluator's predictions mean nothing)."""
    for split in ("dev", "test"):
        for copy in ("", suffix):
            source, target = libri / f"libri_{split}_trials_mixed{copy}", data / f"emodata_track2_{split}{copy}"
            target.mkdir()
            for name in ("wav.scp", "utt2spk"):
                lines = [line.split(maxsplit=1) for line in (source / name).read_text().splitlines()]
                lines = [[u, f"emo_{v}" if name == "utt2spk" else v] for u, v in lines]
                (target / name).write_text("".join(f"emo_{u} {v}\n" for u, v in lines))
            utts = [line.split()[0] for line in (source / "utt2spk").read_text().splitlines()]
            (target / "utt2emo").write_text("".join(f"emo_{u} {EMOTIONS[i % 4]}\n" for i, u in enumerate(utts)))
            genders = [line.split() for line in (source / "spk2gender").read_text().splitlines()]
            (target / "spk2gender").write_text("".join(f"emo_{s} {g}\n" for s, g in genders))
