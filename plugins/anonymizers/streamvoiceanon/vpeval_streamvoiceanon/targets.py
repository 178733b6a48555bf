"""Target choice of the seed-000 recipe: per utterance a random target speaker from the pool, and one of
that speaker's utterances longer than `min_seconds` as the reference."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vpeval.errors import DataError
from vpeval.types import Utterance


def duration_of(utterance: Utterance) -> float:
    """Seconds, from the corpus when it knows them, else from the file header."""
    if utterance.duration is not None:
        return float(utterance.duration)
    import soundfile

    info = soundfile.info(utterance.path)
    return info.frames / float(info.samplerate)


@dataclass
class TargetPool:
    """Eligible utterances grouped by speaker, both sorted by id so a draw does not depend on corpus order."""

    speakers: list[str]
    utterances: dict[str, list[Utterance]]
    min_seconds: float

    @classmethod
    def build(cls, utterances: Sequence[Utterance], min_seconds: float, pool_name: str) -> TargetPool:
        by_speaker: dict[str, list[Utterance]] = {}
        for u in utterances:
            if duration_of(u) > min_seconds:
                by_speaker.setdefault(u.speaker, []).append(u)
        if not by_speaker:
            raise DataError(
                f"stream-voice-anon pool {pool_name} has no utterance longer than {min_seconds:g} s to use as a target."
            )
        for items in by_speaker.values():
            items.sort(key=lambda u: u.id)
        return cls(sorted(by_speaker), by_speaker, min_seconds)

    def draw(self, rng: np.random.Generator, exclude_speaker: str | None = None, by: str = "speaker") -> Utterance:
        """by "speaker": a speaker uniformly (never the source's own where another exists), then one of its
        eligible utterances uniformly; by "utterance": an eligible utterance uniformly (long-talking
        speakers come up more often)."""
        speakers = [s for s in self.speakers if s != exclude_speaker] or self.speakers
        if by == "utterance":
            items = [u for s in speakers for u in self.utterances[s]]
            return items[int(rng.integers(len(items)))]
        speaker = speakers[int(rng.integers(len(speakers)))]
        items = self.utterances[speaker]
        return items[int(rng.integers(len(items)))]
