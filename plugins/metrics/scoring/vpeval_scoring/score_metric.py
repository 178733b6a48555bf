"""The machinery every score metric shares: input checks, per-gender subsets, the VPAC average and the
speaker-level bootstrap. A concrete metric only says how to measure one weighted set of trials."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params
from vpeval.errors import MetricInputError
from vpeval.types import MetricResult, Scores
from vpeval_scoring.bootstrap import percentile_interval, replicate
from vpeval_scoring.checks import check_scores
from vpeval_scoring.sorted_trials import SortedTrials, sorted_trials

GENDERS = ("f", "m")


MAX_BOOTSTRAP = 100_000  # each replicate re-sorts every trial: more would run for hours


class BootstrapParams(Params):
    bootstrap: int = Field(
        1000,
        ge=0,
        le=MAX_BOOTSTRAP,
        description="Speaker-level bootstrap replicates for the confidence interval; 0 disables it.",
    )
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Coverage of the percentile confidence interval.")


@dataclass
class Measurement:
    """One number a metric reports for a set of trials, with what it means."""

    value: float
    details: dict[str, Any] = field(default_factory=dict)
    metric: str | None = None  # defaults to the plugin's name
    unit: str | None = None  # defaults to the plugin's unit


class ScoreMetric(Metric):
    """Base of the metrics that read verification scores (needs = "scores")."""

    needs: ClassVar[str] = "scores"
    unit: ClassVar[str] = ""
    Params = BootstrapParams

    def measure(self, trials: SortedTrials, weights: np.ndarray | None) -> list[Measurement]:
        """The metric's numbers on the trials; weights (bootstrap replicates) count each trial that often.
        Return NaN values where a replicate leaves the metric undefined."""
        raise NotImplementedError

    # -- shared machinery -------------------------------------------------------------------

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        scores = inputs.scores
        if scores is None:
            raise MetricInputError(f"Metric {self.name} needs verification scores, but none were given.")
        subsets = self._subsets(scores)
        points: dict[str, list[Measurement]] = {}
        reps: dict[str, np.ndarray | None] = {}
        for gender, mask in subsets:
            values, targets = _pick(scores.scores, mask), _pick(scores.targets, mask)
            check_scores(values, targets, self.name, gender)
            trials = sorted_trials(values, targets)
            points[gender] = self.measure(trials, None)
            reps[gender] = self._replicates(trials, scores, mask, gender)
        results: list[MetricResult] = []
        for gender, _ in subsets:
            results += self._results(gender, points[gender], reps[gender])
            if gender == "m" and "f" in points:
                avg = [
                    Measurement((f.value + m.value) / 2, {"of": "mean of f and m"}, f.metric, f.unit)
                    for f, m in zip(points["f"], points["m"], strict=True)
                ]
                for a, f in zip(avg, points["f"], strict=True):
                    a.details.update({k: v for k, v in f.details.items() if k in ("p_target", "variant")})
                both = None if reps["f"] is None or reps["m"] is None else (reps["f"] + reps["m"]) / 2
                results += self._results("avg", avg, both)
        return results

    def _subsets(self, scores: Scores) -> list[tuple[str, np.ndarray | None]]:
        """Masks of f and m (those present) and the pooled trials (None: all); only the pooled ones
        without gender labels. Masks, not copies: a million trials select in milliseconds."""
        out: list[tuple[str, np.ndarray | None]] = []
        if scores.genders is not None:
            genders = np.asarray(scores.genders)
            for g in GENDERS:
                mask = genders == g
                if mask.any():
                    out.append((g, mask))
        out.append(("all", None))
        return out

    def _replicates(
        self, trials: SortedTrials, scores: Scores, mask: np.ndarray | None, gender: str
    ) -> np.ndarray | None:
        n = int(getattr(self.params, "bootstrap", 0))
        if n == 0:
            return None
        speakers = scores.enroll_speakers if scores.enroll_speakers is not None else scores.enroll_ids
        if speakers is None:
            self.context.log.warning(
                "%s: the scores carry no enrollment speakers, so no confidence interval", self.name
            )
            return None
        rng = self.context.rng("bootstrap", self.name, gender)

        def values(weights: np.ndarray) -> np.ndarray:
            with np.errstate(all="ignore"):
                return np.array([m.value for m in self.measure(trials, weights)])

        return replicate(values, _pick(np.asarray(speakers), mask), n, rng)

    def _results(self, gender: str, measured: list[Measurement], reps: np.ndarray | None) -> list[MetricResult]:
        out = []
        confidence = float(getattr(self.params, "confidence", 0.95))
        for k, m in enumerate(measured):
            low = high = None
            details = dict(m.details)
            if reps is not None:
                low, high = percentile_interval(reps[:, k], confidence)
                details["bootstrap"] = {
                    "replicates": int(len(reps)),
                    "valid": int(np.isfinite(reps[:, k]).sum()),
                    "confidence": confidence,
                    "unit": "enrollment speaker",
                }
            out.append(
                MetricResult(
                    m.metric or self.name,
                    float(m.value),
                    gender,
                    low,
                    high,
                    m.unit if m.unit is not None else self.unit,
                    details,
                )
            )
        return out


def _pick(array: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    return array if mask is None else array[mask]
