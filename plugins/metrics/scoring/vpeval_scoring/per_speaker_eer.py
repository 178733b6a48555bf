"""EER per enrolled speaker (VoicePrivacy 2026's compute_per_speaker_eer): how unevenly protection falls.

A speaker's trials are those whose enrollment side is that speaker: its target trials (its own test
utterances) and its non-target trials (other speakers' utterances scored against it). Each speaker's
EER is SpeechBrain's step EER (what the pooled `eer` reports) over those trials only; with `clip`, a
speaker whose EER exceeds 50 % (its scores ranked the wrong way round, which a threshold flip would
exploit) counts as 50 %. Speakers without a target or without a non-target trial have no EER: they are
listed with that reason and left out of the mean and median. VPC 2026's configuration names the flag,
its released code does not compute it; this follows the definition of the evaluation plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import Field

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval.stats import speaker_weights
from vpeval.types import MetricResult
from vpeval_scoring.checks import check_scores
from vpeval_scoring.eer import step_eer
from vpeval_scoring.score_metric import BootstrapParams, Measurement, ScoreMetric
from vpeval_scoring.sorted_trials import SortedTrials

MEAN, MEDIAN = "per-speaker-eer", "per-speaker-eer-median"


@dataclass
class SpeakerEers:
    """Per enrolled speaker: EER in % (NaN where undefined) and its trial counts, sorted by speaker."""

    speakers: np.ndarray
    eers: np.ndarray
    targets: np.ndarray
    nontargets: np.ndarray

    @property
    def valid(self) -> np.ndarray:
        return np.isfinite(self.eers)


def speaker_eers(scores: np.ndarray, targets: np.ndarray, speakers: np.ndarray, clip: bool) -> SpeakerEers:
    """Step EER (%) of each enrolled speaker over that speaker's trials; clipped at 50 % if asked."""
    names, index = np.unique(np.asarray(speakers).astype(str), return_inverse=True)
    order = np.argsort(index, kind="stable")
    bounds = np.searchsorted(index[order], np.arange(len(names) + 1))
    eers = np.full(len(names), np.nan)
    n_tar = np.zeros(len(names), dtype=np.int64)
    n_non = np.zeros(len(names), dtype=np.int64)
    for s in range(len(names)):
        rows = order[bounds[s] : bounds[s + 1]]
        t = targets[rows]
        n_tar[s], n_non[s] = int(t.sum()), int((~t).sum())
        if n_tar[s] and n_non[s]:
            eers[s] = 100 * step_eer(SortedTrials(scores[rows], t).counts).eer
    if clip:
        eers = np.minimum(eers, 50.0)  # NaN stays NaN
    return SpeakerEers(names, eers, n_tar, n_non)


class PerSpeakerEER(ScoreMetric):
    """Mean and median over enrolled speakers of each speaker's own EER (%), with every speaker's value."""

    name = "per-speaker-eer"
    unit = "%"
    result_metrics = (MEAN, MEDIAN)

    class Params(BootstrapParams):
        clip: bool = Field(
            False,
            description="Count a speaker's EER above 50 % as 50 % (a speaker ranked the wrong way round is "
            "as unprotected as one at 50 %, not better protected).",
        )

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        scores = inputs.scores
        if scores is None:
            raise MetricInputError(f"Metric {self.name} needs verification scores, but none were given.")
        speakers = scores.enroll_speakers if scores.enroll_speakers is not None else scores.enroll_ids
        if speakers is None:
            raise MetricInputError(
                f"{self.name} needs the enrollment speaker of every trial, but the scores carry none: score "
                "through an attacker (which records them) or give a score file with an enrollment column."
            )
        speakers = np.asarray(speakers)
        results: list[MetricResult] = []
        points: dict[str, list[Measurement]] = {}
        reps: dict[str, np.ndarray | None] = {}
        for gender, mask in self._subsets(scores):
            pick = (lambda a: a) if mask is None else (lambda a, m=mask: a[m])
            values, targets = pick(scores.scores), pick(scores.targets)
            check_scores(values, targets, self.name, gender)
            table = speaker_eers(values, targets, pick(speakers), self.params.clip)
            if not table.valid.any():
                where = "the trials" if gender == "all" else f"the {gender} trials"
                raise MetricInputError(
                    f"{self.name}: no enrolled speaker of {where} has both a target and a non-target trial, so no "
                    "speaker has an EER; use trial lists that score each enrollment against other speakers too."
                )
            points[gender] = self.summarise(table)
            reps[gender] = self.replicates(table, gender)
            results += self._results(gender, points[gender], reps[gender])
            if gender == "m" and "f" in points:
                avg = [
                    Measurement((f.value + m.value) / 2, {"of": "mean of f and m", "clip": self.params.clip}, f.metric)
                    for f, m in zip(points["f"], points["m"], strict=True)
                ]
                both = None if reps["f"] is None or reps["m"] is None else (reps["f"] + reps["m"]) / 2
                results += self._results("avg", avg, both)
        return results

    def summarise(self, table: SpeakerEers) -> list[Measurement]:
        ok = table.valid
        per_speaker = {str(s): float(e) if np.isfinite(e) else None for s, e in zip(table.speakers, table.eers)}
        skipped = [str(s) for s in table.speakers[~ok]]
        details = {
            "clip": self.params.clip,
            "speakers": int(ok.sum()),
            "eer": "SpeechBrain step EER of each enrolled speaker over its own trials",
        }
        if skipped:
            details["skipped"] = {"speakers": skipped, "reason": "no target or no non-target trial"}
        details["trials_per_speaker"] = {
            "targets": [int(table.targets.min()), int(table.targets.max())],
            "nontargets": [int(table.nontargets.min()), int(table.nontargets.max())],
        }
        values = table.eers[ok]
        return [
            Measurement(float(values.mean()), {**details, "per_speaker": per_speaker}, MEAN),
            Measurement(float(np.median(values)), details, MEDIAN),
        ]

    def replicates(self, table: SpeakerEers, gender: str) -> np.ndarray | None:
        """Speaker bootstrap: redraw the speakers that have an EER, with replacement; mean and median of the
        draw (each speaker's EER counted as often as it was drawn)."""
        n = int(self.params.bootstrap)
        if n == 0:
            return None
        values = table.eers[table.valid]
        rng = self.context.rng("bootstrap", self.name, gender)
        out = np.empty((n, 2))
        for r, counts in enumerate(speaker_weights(table.speakers[table.valid], n, rng)):
            out[r, 0] = counts @ values / counts.sum()
            out[r, 1] = np.median(np.repeat(values, counts.astype(np.int64)))
        return out
