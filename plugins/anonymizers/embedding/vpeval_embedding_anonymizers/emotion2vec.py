"""Seed 003's emotion indicator: emotion2vec+ (Ma et al., 2024) from a local model folder, read by FunASR.

emotion2vec+ predicts 9 classes (angry, disgusted, fearful, happy, neutral, other, sad, surprised,
unknown); seed 003 (section 4.1) maps disgusted and fearful to sad, surprised to happy, and unknown and
other to neutral. The network is FunASR's data2vec-2.0 audio encoder (Emotion2vec in
funasr/models/emotion2vec); vpeval does not rebuild it, so this indicator needs the `funasr` package and
a local folder as FunASR or ModelScope lay it out (model.pt, config.yaml, tokens.txt), loaded by
vpeval_emotion2vec (lib/emotion2vec: no hub, model.pt opened weights-only before FunASR unpickles it),
the loader the uar metric's emotion2vec evaluator shares.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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


def folder_problems(folder: str | None) -> list[str]:
    """Sentences naming what an emotion2vec+ folder lacks (existence only)."""
    from vpeval_emotion2vec.folder import folder_problems as problems

    return problems(folder, "emotion2vec_folder")


def english(label: str) -> str:
    """emotion2vec+ labels are bilingual ('生气/angry'); the English part, lower case ('<unk>': unknown)."""
    from vpeval_emotion2vec.folder import english as english_name

    return english_name(label)


def four_class(labels: list[str], scores: list[float], emotions: list[str]) -> str:
    """The modelled emotion with the most probability once the 9 classes are mapped as the paper maps them."""
    totals = dict.fromkeys(emotions, 0.0)
    for label, score in zip(labels, scores, strict=True):
        target = PAPER_MAP.get(english(label))
        if target in totals:
            totals[target] += float(score)
    return max(totals, key=totals.get)


class Emotion2vecIndicator:
    """Predicts each utterance's emotion with emotion2vec+ from a local folder (vpeval_emotion2vec's loader, the
    one the uar metric's emotion2vec evaluator uses)."""

    def __init__(self, folder: str, device: str, emotions: list[str]):
        from vpeval_emotion2vec.folder import load

        self.model = load(str(Path(folder).expanduser()), device)
        self.emotions = emotions

    def predict(self, audio: np.ndarray) -> str:
        """One 16 kHz utterance's emotion among `emotions`."""
        from vpeval_emotion2vec.folder import scores

        labels, probabilities = scores(self.model, audio)
        return four_class(labels, probabilities, self.emotions)
