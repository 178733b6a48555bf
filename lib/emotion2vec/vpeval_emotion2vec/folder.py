"""emotion2vec+ from a local folder, read by FunASR's AutoModel: the hub is never asked (the folder is passed as an
existing path, the update check is off) and model.pt is first opened weights-only (FunASR unpickles it with plain
torch.load), so a checkpoint holding anything but tensors is refused before FunASR sees it.

emotion2vec+ scores 9 classes, labelled bilingually in tokens.txt ('生气/angry', ..., '<unk>'); `classes`
gives their English names. The VoicePrivacy 2026 toolkit (evaluation/utility/ser/emotion2vec_ser.py, e6810a4)
takes the most probable of the 9 and maps it onto IEMOCAP's four labels with TOOLKIT_MAP.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from vpeval.errors import MissingModelError

FOLDER_FILES = ("model.pt", "config.yaml", "tokens.txt")
# The toolkit's EMOTION2VEC_TO_IEMOCAP (emotion2vec_ser.py, e6810a4), as data: a class not listed reads as neu.
TOOLKIT_MAP = {
    "angry": "ang",
    "disgusted": "ang",
    "fearful": "sad",
    "happy": "hap",
    "neutral": "neu",
    "other": "neu",
    "sad": "sad",
    "surprised": "neu",
    "unknown": "neu",
}
# Seed 003's map (section 4.1), in the same labels: disgusted and fearful -> sad, surprised -> happy, other and
# unknown -> neutral.
SEED003_MAP = {**TOOLKIT_MAP, "disgusted": "sad", "surprised": "hap"}
MAPS = {"vpc2026": TOOLKIT_MAP, "seed003": SEED003_MAP}
IEMOCAP_LABELS = ("ang", "hap", "neu", "sad")


def folder_problems(folder: str | None, parameter: str) -> list[str]:
    """Sentences naming what an emotion2vec+ folder lacks (existence only), for validate."""
    if folder is None:
        return [f"{parameter} is not set: give a local emotion2vec+ folder (model.pt, config.yaml, tokens.txt)."]
    path = Path(folder).expanduser()
    if not path.is_dir():
        return [f"{parameter} {folder} is not a folder (a local copy of emotion2vec_plus_large or _base)."]
    return [
        f"{parameter} {folder} has no {name} (FunASR's emotion2vec+ layout: model.pt, config.yaml, tokens.txt)."
        for name in FOLDER_FILES
        if not (path / name).is_file()
    ]


def english(label: str) -> str:
    """'生气/angry' -> 'angry'; '<unk>' -> 'unknown' (as the toolkit reads it)."""
    label = label.split("/")[-1].strip().lower()
    return "unknown" if label == "<unk>" else label


@functools.lru_cache(maxsize=2)
def load(folder: str, device: str):
    """FunASR's AutoModel on the local folder, after a weights-only look at model.pt."""
    problems = folder_problems(folder, "the emotion2vec+ folder")
    if problems:
        raise MissingModelError(problems[0])
    try:
        from funasr import AutoModel
    except ImportError as exc:
        raise MissingModelError(
            "emotion2vec+ is read through FunASR, which is not installed: install requirements.lock's funasr, "
            "omegaconf and kaldiio (funasr without its declared dependencies)."
        ) from exc
    from vpeval.torchload import load_weights_only

    path = Path(folder).expanduser().resolve()
    load_weights_only(path / "model.pt")
    return AutoModel(model=str(path), device=device, disable_update=True, disable_pbar=True, log_level="ERROR")


def scores(model, audio: np.ndarray) -> tuple[list[str], list[float]]:
    """The 9 classes (English names) and their probabilities for one 16 kHz utterance."""
    (out,) = model.generate(np.asarray(audio, dtype=np.float32), granularity="utterance", extract_embedding=False)
    return [english(label) for label in out["labels"]], [float(s) for s in out["scores"]]


def toolkit_label(labels: list[str], probabilities: list[float], mapping: dict[str, str] = TOOLKIT_MAP) -> str:
    """The toolkit's prediction: the most probable of the 9 classes, mapped onto ang / hap / neu / sad."""
    best = int(np.argmax(np.asarray(probabilities)))
    return mapping.get(labels[best] if best < len(labels) else "unknown", "neu")


def embedding(model, audio: np.ndarray) -> np.ndarray:
    """emotion2vec+'s utterance embedding of one 16 kHz utterance: FunASR's `feats`, the mean over frames of the last
    layer (768-d for emotion2vec_plus_large), the representation seed 003's P1/P3 and Figure 5 use."""
    (out,) = model.generate(np.asarray(audio, dtype=np.float32), granularity="utterance", extract_embedding=True)
    return np.asarray(out["feats"], dtype=np.float32).reshape(-1)
