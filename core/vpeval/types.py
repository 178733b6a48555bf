"""The data types that pass between the core and plugins.

They are plain dataclasses and numpy arrays, so plugins need nothing but numpy to use them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from vpeval.settings import PlanSettings

PROTOCOLS = ("O-O", "O-A", "A-A")


@dataclass(frozen=True)
class Utterance:
    """One recording with what is known about it.

    `path` is a local audio file. Optional fields are None where the corpus does not have them.
    `sample_rate` and `duration` are filled in when known without reading the file.
    """

    id: str
    speaker: str
    path: str
    gender: str | None = None  # "f" or "m"
    transcript: str | None = None
    emotion: str | None = None
    session: str | None = None
    sample_rate: int | None = None
    duration: float | None = None
    channel: int | None = None  # for multi-channel files; None mixes to mono

    def load(self, sample_rate: int | None = None) -> np.ndarray:
        """Mono float32 samples, resampled to `sample_rate` when given (else the file's rate)."""
        from vpeval.audio import read_audio

        return read_audio(self.path, sample_rate=sample_rate, channel=self.channel)[0]

    def replace(self, **changes: Any) -> Utterance:
        return dataclasses.replace(self, **changes)


@dataclass
class Corpus:
    """An ordered set of utterances with speaker metadata.

    `fingerprint` identifies the content (audio bytes and labels); the cache keys on it.
    """

    name: str
    utterances: list[Utterance]
    speaker_gender: dict[str, str] = field(default_factory=dict)
    fingerprint: str = ""
    info: dict[str, Any] = field(default_factory=dict)  # free-form: card, engine, sources

    def __post_init__(self) -> None:
        self._by_id: dict[str, Utterance] = {}
        for u in self.utterances:
            if u.id in self._by_id:
                raise ValueError(f"corpus {self.name} has the utterance id {u.id} twice")
            self._by_id[u.id] = u
        for u in self.utterances:
            if u.gender and u.speaker not in self.speaker_gender:
                self.speaker_gender[u.speaker] = u.gender

    def __len__(self) -> int:
        return len(self.utterances)

    def __iter__(self) -> Iterator[Utterance]:
        return iter(self.utterances)

    def __getitem__(self, utterance_id: str) -> Utterance:
        return self._by_id[utterance_id]

    def __contains__(self, utterance_id: object) -> bool:
        return utterance_id in self._by_id

    def utterances_of(self, utterance_ids: Iterable[str]) -> list[Utterance]:
        """The utterances of these ids, in order (KeyError for one the corpus lacks): one C-level look-up
        each, for the trial sides of a VoicePrivacy-sized run."""
        return list(map(self._by_id.__getitem__, utterance_ids))

    @property
    def speakers(self) -> list[str]:
        """Speaker ids in first-appearance order."""
        return list(dict.fromkeys(u.speaker for u in self.utterances))

    def by_speaker(self) -> dict[str, list[Utterance]]:
        out: dict[str, list[Utterance]] = {}
        for u in self.utterances:
            out.setdefault(u.speaker, []).append(u)
        return out

    def gender_of(self, speaker: str) -> str | None:
        return self.speaker_gender.get(speaker)

    def subset(self, utterance_ids: Sequence[str], name: str | None = None) -> Corpus:
        """The corpus restricted to these ids, in the given order."""
        return Corpus(
            name=name or self.name,
            utterances=[self._by_id[i] for i in utterance_ids],
            speaker_gender=dict(self.speaker_gender),
            fingerprint="",
            info=dict(self.info),
        )

    def with_speakers(self, speakers: Sequence[str], name: str | None = None) -> Corpus:
        wanted = set(speakers)
        return self.subset([u.id for u in self.utterances if u.speaker in wanted], name=name)


@dataclass(frozen=True)
class Trial:
    """One verification trial: an enrollment side and a test side, each a tuple of utterance ids.

    Single-utterance VoicePrivacy trials have a speaker's enrollment set on the enroll side and one
    utterance on the test side; multi-utterance trials have N utterances on both sides.
    """

    enroll: tuple[str, ...]
    test: tuple[str, ...]
    target: bool
    gender: str | None = None
    enroll_speaker: str = ""
    test_speaker: str = ""
    enroll_id: str = ""  # the name written to Kaldi trial files
    test_id: str = ""
    subset: str = ""  # the evaluation set it belongs to (VoicePrivacy: libri_dev, libri_test); "" when only one


@dataclass
class TrialList:
    """The trials of one enrollment size N (the same list serves O-O, O-A and A-A)."""

    n: int
    trials: list[Trial]
    name: str = ""

    def __len__(self) -> int:
        return len(self.trials)


@dataclass
class Scores:
    """Scores of a trial list: one row per trial. Higher means more likely the same speaker."""

    scores: np.ndarray  # float64 [T]
    targets: np.ndarray  # bool [T]
    genders: np.ndarray | None = None  # object/str [T] of "f"/"m", or None
    enroll_speakers: np.ndarray | None = None  # str [T], for speaker-level bootstrap
    test_speakers: np.ndarray | None = None
    enroll_ids: np.ndarray | None = None
    test_ids: np.ndarray | None = None
    subsets: np.ndarray | None = None  # str [T]: each trial's evaluation set (Trial.subset), or None

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        self.targets = np.asarray(self.targets, dtype=bool)
        if self.scores.shape != self.targets.shape or self.scores.ndim != 1:
            raise ValueError("scores and targets must be 1-d arrays of the same length")

    def __len__(self) -> int:
        return len(self.scores)

    def select(self, mask: np.ndarray) -> Scores:
        pick = lambda a: None if a is None else np.asarray(a)[mask]  # noqa: E731
        return Scores(
            self.scores[mask],
            self.targets[mask],
            pick(self.genders),
            pick(self.enroll_speakers),
            pick(self.test_speakers),
            pick(self.enroll_ids),
            pick(self.test_ids),
            pick(self.subsets),
        )

    def subset_names(self) -> list[str]:
        """The evaluation sets these trials come from, in first-seen order (none: one unnamed set)."""
        if self.subsets is None:
            return []
        return [name for name in dict.fromkeys(np.asarray(self.subsets).tolist()) if name]


@dataclass
class FrontendOutput:
    """What a speech-token frontend makes of one waveform.

    tokens: int64 [N frames, Q codebooks] or None; features: float32 [N, D] or None; at least one set.
    """

    frame_rate: float
    tokens: np.ndarray | None = None
    codebook_sizes: tuple[int, ...] = ()
    features: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.tokens is None and self.features is None:
            raise ValueError("a FrontendOutput needs tokens, features or both")
        if self.tokens is not None:
            if self.tokens.ndim != 2 or self.tokens.shape[1] != len(self.codebook_sizes):
                raise ValueError("tokens must be [frames, codebooks] with one size per codebook")


@dataclass
class MetricResult:
    """One number with where it applies. `details` holds extra values (threshold, per-class, ...)."""

    metric: str
    value: float
    gender: str = "all"  # "f", "m", "avg" (mean of f and m, as VPAC reports) or "all" (pooled)
    ci_low: float | None = None
    ci_high: float | None = None
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainingStage:
    """One stage of an attacker's training data (DAST trains in several, seed 001).

    `corpus` is what the stage trains on; `system` names the conversion system that produced it
    ("original" for untouched speech).
    """

    name: str
    corpus: Corpus
    system: str = "original"


@dataclass
class TrainingData:
    """Everything an attacker may train on, in curriculum order, plus a validation corpus."""

    stages: list[TrainingStage]
    validation: Corpus | None = None
    scenario: str = "original"  # "original" or "anonymized" (train_on)

    @property
    def corpus(self) -> Corpus:
        """All stages together, for attackers that train in one go (the last stage's speakers)."""
        utts: list[Utterance] = []
        genders: dict[str, str] = {}
        seen: set[str] = set()
        for stage in self.stages:
            genders.update(stage.corpus.speaker_gender)
            for u in stage.corpus.utterances:
                uid = u.id if u.id not in seen else f"{stage.name}/{u.id}"
                seen.add(uid)
                utts.append(u if uid == u.id else u.replace(id=uid))
        return Corpus("training", utts, genders)


@dataclass
class EvaluationPlan:
    """The split and the trials of one experiment, made by the core or given by a corpus source.

    `evaluation` holds every evaluation utterance (enrollment pool + trial pool); `enroll_ids` and
    `test_ids` are the two pools, disjoint. `notes` lists what the plan had to compromise on.
    """

    train: Corpus
    validation: Corpus | None
    evaluation: Corpus
    enroll_ids: list[str]
    test_ids: list[str]
    trial_lists: dict[int, TrialList]
    settings: PlanSettings
    notes: list[str] = field(default_factory=list)
