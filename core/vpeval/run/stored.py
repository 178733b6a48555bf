"""How each stage's output is stored in its cache folder: `save(value, folder)` and `load(folder)` per type.

`reload` says whether the runner hands on what `load` reads back instead of the computed value, so a
fresh run and a cached rerun see the same thing (file paths inside the final folder, JSON-normal values).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np

from vpeval.api import Plugin
from vpeval.types import Corpus, MetricResult, Scores

P = TypeVar("P", bound=Plugin)


class Stored(Protocol):
    reload: bool

    def save(self, value: Any, folder: Path) -> None: ...

    def load(self, folder: Path) -> Any: ...

    def stand_in(self) -> Any: ...  # what planning hands on instead of the value (cached_step.get_or_build)


class StoredScores:
    """Trial scores and their labels in scores.npz (no pickles)."""

    reload: ClassVar[bool] = False
    LABELS = ("genders", "enroll_speakers", "test_speakers", "enroll_ids", "test_ids", "subsets")

    @classmethod
    def save(cls, scores: Scores, folder: Path) -> None:
        arrays = {"scores": scores.scores, "targets": scores.targets}
        for name in cls.LABELS:
            value = getattr(scores, name)
            if value is not None:
                arrays[name] = np.asarray(value).astype(str)
        np.savez(folder / "scores.npz", **arrays)

    @classmethod
    def load(cls, folder: Path) -> Scores:
        with np.load(folder / "scores.npz", allow_pickle=False) as data:
            labels = {name: data[name] if name in data.files else None for name in cls.LABELS}
            return Scores(data["scores"], data["targets"], **labels)


class StoredMetricResults:
    """A metric's results as JSON; numpy numbers become plain numbers, other objects their text."""

    reload: ClassVar[bool] = True

    @staticmethod
    def save(results: list[MetricResult], folder: Path) -> None:
        text = json.dumps([asdict(r) for r in results], default=_plain, allow_nan=True)
        (folder / "results.json").write_text(text)

    @staticmethod
    def load(folder: Path) -> list[MetricResult]:
        return [MetricResult(**r) for r in json.loads((folder / "results.json").read_text())]

    @staticmethod
    def stand_in() -> list[MetricResult]:
        return []


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


@dataclass
class SpeechFiles:
    """Audio files written one by one into `folder`; entries: [{"id": utterance id, "file": name}]."""

    folder: Path
    entries: list[dict[str, str]]


@dataclass
class StoredSpeech:
    """A corpus's anonymized audio: one file per utterance plus manifest.jsonl (id -> file)."""

    original: Corpus
    reload: ClassVar[bool] = True

    def save(self, files: SpeechFiles, folder: Path) -> None:
        for entry in files.entries:
            os.replace(files.folder / entry["file"], folder / entry["file"])
        (folder / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in files.entries))

    def load(self, folder: Path) -> Corpus:
        from vpeval.audio import check_audio

        utts = []
        for line in (folder / "manifest.jsonl").read_text().splitlines():
            entry = json.loads(line)
            path = folder / entry["file"]
            frames, rate = check_audio(path)
            utts.append(self.original[entry["id"]].replace(path=str(path), sample_rate=rate, duration=frames / rate))
        original = self.original
        return Corpus(original.name + "-anonymized", utts, dict(original.speaker_gender), fingerprint=folder.name)

    def stand_in(self) -> Corpus:  # planning: the same utterances, which is all a later stage's key reads
        return self.original


@dataclass
class StoredPlugin(Generic[P]):
    """A plugin's learned state (a trained attacker, a fitted frontend), through its own save and load."""

    instance: P
    reload: ClassVar[bool] = False

    def save(self, instance: P, folder: Path) -> None:
        instance.save(folder)  # type: ignore[attr-defined]

    def load(self, folder: Path) -> P:
        self.instance.load(folder)  # type: ignore[attr-defined]
        return self.instance

    def stand_in(self) -> P:  # planning: untrained; later keys read only the key of its entry
        return self.instance
