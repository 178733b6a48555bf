"""Training audio: a bounded in-memory cache (validation utterances) and the crops an epoch draws."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from vpeval.types import Utterance


class AudioCache:
    """Mono float32 audio at one sample rate, kept in memory up to a byte budget (least recently used out)."""

    def __init__(self, sample_rate: int, budget_mb: int):
        self.sample_rate = sample_rate
        self.budget = budget_mb * 1024 * 1024
        self.used = 0
        self.items: OrderedDict[tuple[str, int | None], np.ndarray] = OrderedDict()

    def load(self, utterance: Utterance) -> np.ndarray:
        key = (utterance.path, utterance.channel)
        audio = self.items.get(key)
        if audio is not None:
            self.items.move_to_end(key)
            return audio
        audio = np.asarray(utterance.load(self.sample_rate), dtype=np.float32)
        if audio.nbytes <= self.budget:
            self.items[key] = audio
            self.used += audio.nbytes
            while self.used > self.budget:
                _, old = self.items.popitem(last=False)
                self.used -= old.nbytes
        return audio


def crops_per_utterance(seconds: float, crop_seconds: float) -> int:
    """How many random crops an utterance gives per epoch: one per crop-length stretch, at least one.

    The VoicePrivacy recipe lists every 3 s segment of every utterance and draws a random 3 s chunk of
    the utterance for each, so an epoch covers about all the audio once.
    """
    return max(1, int(seconds // crop_seconds))
