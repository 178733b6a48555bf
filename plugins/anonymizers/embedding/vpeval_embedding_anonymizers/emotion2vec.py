"""Seed 003's emotion indicator: emotion2vec+ (Ma et al., 2024) from a local model folder, read by FunASR.

emotion2vec+ predicts 9 classes (angry, disgusted, fearful, happy, neutral, other, sad, surprised,
unknown); seed 003 (section 4.1) maps disgusted and fearful to sad, surprised to happy, and unknown and
other to neutral. The network is FunASR's data2vec-2.0 audio encoder (Emotion2vec in
funasr/models/emotion2vec); vpeval does not rebuild it, so this indicator needs the `funasr` package and
a local folder as FunASR or ModelScope lay it out (model.pt, config.yaml, tokens.txt). Nothing is ever
fetched from a hub: the folder is passed as a path, with FunASR's update check off. FunASR unpickles
model.pt with plain torch.load, so the file is first opened here with weights_only=True and refused
unless it holds tensors only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from vpeval.errors import MissingModelError

# Seed 003, section 4.1: the 9 emotion2vec+ classes onto IEMOCAP's four.
PAPER_MAP = {
    "angry": "angry",
    "disgusted": "sad",
    "fearful": "sad",
    "happy": "happy",
    "neutral": "neutral",
    "other": "neutral",
    "sad": "sad",
    "surprised": "happy",
    "unknown": "neutral",
    "<unk>": "neutral",
}
FOLDER_FILES = ("model.pt", "config.yaml")


def folder_problems(folder: str | None) -> list[str]:
    """Sentences naming what an emotion2vec+ folder lacks (existence only)."""
    if folder is None:
        return ["indicator emotion2vec needs emotion2vec_folder: a local emotion2vec+ folder (model.pt, config.yaml)."]
    path = Path(folder).expanduser()
    if not path.is_dir():
        return [f"emotion2vec_folder {folder} is not a folder (a local copy of emotion2vec_plus_large or _base)."]
    return [
        f"emotion2vec_folder {folder} has no {name} (FunASR's emotion2vec+ layout: model.pt, config.yaml, tokens.txt)."
        for name in FOLDER_FILES
        if not (path / name).is_file()
    ]


def english(label: str) -> str:
    """emotion2vec+ labels are bilingual ('生气/angry'); the English part, lower case."""
    return label.split("/")[-1].strip().lower()


def four_class(labels: list[str], scores: list[float], emotions: list[str]) -> str:
    """The modelled emotion with the most probability once the 9 classes are mapped as the paper maps them."""
    totals = dict.fromkeys(emotions, 0.0)
    for label, score in zip(labels, scores, strict=True):
        target = PAPER_MAP.get(english(label))
        if target in totals:
            totals[target] += float(score)
    return max(totals, key=totals.get)


class Emotion2vecIndicator:
    """Predicts each utterance's emotion with emotion2vec+ from a local folder (FunASR AutoModel)."""

    def __init__(self, folder: str, device: str, emotions: list[str]):
        problems = folder_problems(folder)
        if problems:
            raise MissingModelError(problems[0])
        try:
            from funasr import AutoModel
        except ImportError as exc:
            raise MissingModelError(
                "indicator emotion2vec reads emotion2vec+ through FunASR, which is not installed: "
                "pip install funasr (vpeval does not rebuild its data2vec-2.0 encoder), or use indicator: prosody."
            ) from exc
        from vpeval.torchload import load_weights_only

        path = Path(folder).expanduser()
        load_weights_only(path / "model.pt")  # refuses a checkpoint that is not tensors only, before FunASR opens it
        # An existing path is read as a local model (FunASR downloads only names it cannot find on disk).
        self.model = AutoModel(model=str(path.resolve()), device=device, disable_update=True)
        self.emotions = emotions

    def predict(self, audio: np.ndarray) -> str:
        """One 16 kHz utterance's emotion among `emotions`."""
        (out,) = self.model.generate(
            np.asarray(audio, dtype=np.float32), granularity="utterance", extract_embedding=False
        )
        return four_class(list(out["labels"]), list(out["scores"]), self.emotions)
