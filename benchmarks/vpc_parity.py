"""docs/vpc.md's parity table: vpeval's per-trial O-A scores and EERs against the VoicePrivacy toolkit's reading.

The tree, submissions and toolkit reference are tests/test_vpc_submission_audio.py's (small real recordings,
a tiny random-weight exp/asv_orig, speechbrain's own EncoderClassifier as the reference). Per submission:
the largest per-trial score difference and the EER of vpeval's run, of the toolkit's reading, and of the
reading vpeval had before issue 36 (a 16-bit copy clipped at +-1; soxr to 16 kHz before the peak division).

    .venv/bin/python benchmarks/vpc_parity.py
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]


def _tests():
    spec = importlib.util.spec_from_file_location("vpc_audio", ROOT / "tests" / "test_vpc_submission_audio.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _old_reading(path: str, tmp: Path) -> str:
    """What the old anonymize step stored: the file at 16 kHz (soxr), as 16-bit PCM clipped at +-1."""
    from vpeval import audio as audio_io

    samples, rate = audio_io.read_audio(path, 16000)
    out = tmp / "old" / Path(path).name
    audio_io.write_audio(out, samples, 16000)
    return str(out)


def _eer(scores: dict, labels: dict) -> float:
    from vpeval.api import MetricInputs
    from vpeval.plugins import get_plugin_manager
    from vpeval.types import Scores

    keys = sorted(scores)
    data = Scores(np.array([scores[k] for k in keys]), np.array([labels[k] for k in keys]))
    (row,) = [
        r for r in get_plugin_manager().get("metric", "eer")().compute(MetricInputs(scores=data)) if r.gender == "all"
    ]
    return row.value


def main() -> None:
    t = _tests()
    tmp = Path(tempfile.mkdtemp(prefix="vpc-parity-"))
    from vpeval.testing.vpc_tree import build_vpc_tree
    from vpeval_speechbrain.tiny import write_ecapa_folder

    data = build_vpc_tree(tmp, suffix="_fast", train_per_speaker=2)
    write_ecapa_folder(tmp / "exp" / "asv_orig", seed=5)
    for folder in t.FOLDERS:
        t._rewrite(data / f"{folder}_fast", data / f"{folder}_float", tmp / "float", t._louder, "FLOAT")
        t._rewrite(data / f"{folder}_fast", data / f"{folder}_24k", tmp / "24k", t._at_24k, "PCM_16")
    labels = {}
    for trials in ("libri_dev_trials_f", "libri_dev_trials_m"):
        for line in (data / trials / "trials").read_text().splitlines():
            spk, uid, label = line.split()
            labels[(spk, uid)] = label == "target"
    print(
        "| submission | max abs score difference, vpeval - toolkit | EER toolkit | EER vpeval | "
        "max abs score difference, old reading - toolkit | EER old reading |"
    )
    print("|---|---|---|---|---|---|")
    for suffix, what in (("_fast", "16-bit, 16 kHz"), ("_float", "float32, peaks 1.3-1.8"), ("_24k", "16-bit, 24 kHz")):
        mine, _ = t._vpeval_scores(tmp, suffix, tmp / f"run{suffix}")
        theirs = t._toolkit_scores(tmp, suffix, tmp / "savedir")
        # the old reading: the same toolkit computation on the files the old anonymize step stored
        for folder in t.FOLDERS:
            old = data / f"{folder}_old{suffix}"
            old.mkdir(exist_ok=True)
            for name in ("utt2spk", "spk2gender", "text"):
                (old / name).write_text((data / f"{folder}{suffix}" / name).read_text())
            lines = [
                line.split(maxsplit=1) for line in (data / f"{folder}{suffix}" / "wav.scp").read_text().splitlines()
            ]
            (old / "wav.scp").write_text("".join(f"{u} {_old_reading(p, tmp / suffix)}\n" for u, p in lines))
        before = t._toolkit_scores(tmp, f"_old{suffix}", tmp / "savedir")
        assert sf.info(next((tmp / suffix / "old").glob("*.wav"))).subtype == "PCM_16"
        new = max(abs(mine[k] - theirs[k]) for k in theirs)
        old = max(abs(before[k] - theirs[k]) for k in theirs)
        print(
            f"| {what} | {new:.2g} | {_eer(theirs, labels):.2f} | {_eer(mine, labels):.2f} | {old:.2g} | "
            f"{_eer(before, labels):.2f} |"
        )


if __name__ == "__main__":
    main()
