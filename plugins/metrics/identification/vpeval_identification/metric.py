"""The identification metric: closed-set identification of each test utterance among the enrolled speakers,
for each protocol's similarity matrix (O-O, O-A, A-A), with speaker-level bootstrap intervals."""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params
from vpeval.errors import MetricInputError
from vpeval.stats import percentile_interval, speaker_weights
from vpeval.types import MetricResult
from vpeval_identification.disclosure import beta_binomial, disclosure, empirical, rank_counts
from vpeval_identification.ranks import SpeakerScores, speaker_scores, true_ranks

TOP_K = (1, 5, 10)
Protocol = Literal["O-O", "O-A", "A-A"]


class IdentificationParams(Params):
    protocols: list[Protocol] = Field(
        ["O-O", "O-A", "A-A"], min_length=1, description="The similarity matrices to identify in."
    )
    pooling: Literal["mean", "max"] = Field(
        "mean", description="How a speaker's score for a probe pools its enrollment utterances' scores."
    )
    estimate: Literal["beta-binomial", "empirical"] = Field(
        "beta-binomial",
        description="Rank probabilities for the disclosure: a fitted beta-binomial (as arXiv 2605.07291 "
        "reports, robust when probes are few) or the rank histogram itself.",
    )
    bootstrap: int = Field(200, ge=0, le=20_000, description="Speaker-level bootstrap replicates; 0 disables.")
    confidence: float = Field(0.95, gt=0.0, lt=1.0, description="Coverage of the percentile interval.")


class Identification(Metric):
    """Top-1/5/10 hit rates (CMC, %), mean rank of the true speaker and similarity rank disclosure (bits)."""

    name = "identification"
    needs: ClassVar[str] = "similarity"
    result_metrics = ("top-1", "top-5", "top-10", "mean-rank", "srd-mean", "srd-max", "rank-spread")
    Params = IdentificationParams

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        results: list[MetricResult] = []
        for protocol in self.params.protocols:
            matrix = inputs.similarity.get(protocol)
            if matrix is None:
                raise MetricInputError(
                    f"Metric {self.name} needs the {protocol} score matrix, but only "
                    f"{sorted(inputs.similarity) or 'none'} were given; drop {protocol} from its `protocols`."
                )
            pooled = speaker_scores(
                matrix.scores,
                matrix.row_speakers,
                matrix.col_speakers,
                matrix.row_ids,
                matrix.col_ids,
                self.params.pooling,
            )
            self._check(pooled, protocol)
            results += self._results(pooled, protocol)
        return results

    def _check(self, pooled: SpeakerScores, protocol: str) -> None:
        if len(pooled.population) < 2 or len(pooled.true) == 0:
            raise MetricInputError(
                f"Metric {self.name}: the {protocol} matrix has {len(pooled.population)} enrolled speaker(s) and "
                f"{len(pooled.true)} test utterance(s) of them; identification needs at least two enrolled "
                "speakers and one test utterance of an enrolled speaker."
            )
        if not np.isfinite(pooled.scores[np.arange(len(pooled.true)), pooled.true]).all():
            raise MetricInputError(
                f"Metric {self.name}: in the {protocol} matrix a test utterance has no finite score against its own "
                "speaker's enrollment utterances; fix the scoring step."
            )

    def _values(self, ranks: np.ndarray, population: int, weights: np.ndarray | None) -> np.ndarray:
        """[top-1, top-5, top-10, mean rank, srd mean, srd max, rank spread] of (weighted) probes."""
        w = np.ones(len(ranks)) if weights is None else weights
        hits = [100.0 * (w @ (ranks <= k)) / w.sum() for k in TOP_K]
        counts = rank_counts(ranks, population, w)
        probabilities = beta_binomial(counts) if self.params.estimate == "beta-binomial" else empirical(counts)
        d = disclosure(probabilities)
        return np.array([*hits, (w @ ranks) / w.sum(), d.mean, d.maximum, d.spread])

    def _results(self, pooled: SpeakerScores, protocol: str) -> list[MetricResult]:
        ranks = true_ranks(pooled.scores, pooled.true)
        n = len(pooled.population)
        point = self._values(ranks, n, None)
        intervals: list[tuple[float | None, float | None]] = [(None, None)] * len(point)
        details_ci = {}
        if self.params.bootstrap:
            rng = self.context.rng("bootstrap", self.name, protocol)
            reps = np.array(
                [
                    self._values(ranks, n, w)
                    for w in speaker_weights(pooled.probe_speakers, self.params.bootstrap, rng)
                    if w.sum() > 0
                ]
            )
            intervals = [percentile_interval(reps[:, j], self.params.confidence) for j in range(len(point))]
            details_ci = {
                "bootstrap": {
                    "replicates": self.params.bootstrap,
                    "confidence": self.params.confidence,
                    "unit": "test speaker",
                }
            }
        common = {
            "protocol": protocol,
            "population": n,
            "probes": len(ranks),
            "probe_speakers": len(np.unique(pooled.probe_speakers)),
            "probes_left_out": pooled.left_out,
            "pooling": self.params.pooling,
            **details_ci,
        }
        empirical_srd = disclosure(empirical(rank_counts(ranks, n)))
        srd = {"estimate": self.params.estimate, "srd_empirical": empirical_srd.__dict__}
        chance = [100.0 * min(k, n) / n for k in TOP_K] + [(n + 1) / 2, 0.0, 0.0, 0.0]
        units = ["%", "%", "%", "rank", "bits", "bits", "%"]
        extra = [{"k": k, "trivial": k >= n} for k in TOP_K] + [{}, srd, srd, srd]
        return [
            MetricResult(
                name,
                float(value),
                "all",
                _num(low),
                _num(high),
                unit,
                {**common, "chance": chance_value, **more},
            )
            for name, value, (low, high), unit, chance_value, more in zip(
                self.result_metrics, point, intervals, units, chance, extra, strict=True
            )
        ]


def _num(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)
