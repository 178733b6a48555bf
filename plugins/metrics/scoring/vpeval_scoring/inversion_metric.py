"""Speaker-inversion metrics of seed 002 as a Metric plugin reading recovered and target embeddings."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params
from vpeval.errors import MetricInputError
from vpeval.types import MetricResult
from vpeval_scoring.checks import check_scores
from vpeval_scoring.dcf import min_dcf
from vpeval_scoring.eer import step_eer
from vpeval_scoring.inversion import best_accuracy, cos_sim, kl_divergence, pair_trials, verification_trials
from vpeval_scoring.sorted_trials import SortedTrials


class Inversion(Metric):
    """Seed 002 eq. 14-15: CosSim, KL, accuracy and its cosine threshold, EER and minDCF of recovered embeddings."""

    name = "inversion"
    needs: ClassVar[str] = "embeddings"
    result_metrics: ClassVar[tuple[str, ...]] = (
        "inversion-cossim",
        "inversion-kl",
        "inversion-acc",
        "inversion-threshold",
        "inversion-eer",
        "inversion-min-dcf",
    )

    class Params(Params):
        epsilon: float = Field(1e-8, gt=0, le=1, description="The small constant of eq. 15's KL divergence.")
        p_target: float = Field(0.01, gt=0, lt=1, description="minDCF target prior (the paper: 0.01).")
        c_miss: float = Field(1.0, gt=0, le=1e6, description="minDCF cost of a miss.")
        c_fa: float = Field(1.0, gt=0, le=1e6, description="minDCF cost of a false alarm.")
        balanced_accuracy: bool = Field(
            True,
            description="Accuracy as the mean of same- and different-speaker accuracies (else share of correct pairs).",
        )

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        recovered, target, speakers = self._check(inputs)
        if inputs.pairs is not None:  # the attacker's trial list, or its sample of too many pairs
            trials = SortedTrials(*pair_trials(recovered, target, speakers, inputs.pairs))
        else:
            trials = SortedTrials(*verification_trials(recovered, target, speakers))
        check_scores(trials.scores, trials.targets, self.name)
        tally = trials.tally()
        acc = best_accuracy(tally, self.params.balanced_accuracy)
        eer = step_eer(tally)
        dcf = min_dcf(tally, self.params.p_target, self.params.c_miss, self.params.c_fa)
        pairs = {"pairs": len(trials), "same_speaker_pairs": trials.n_target}
        if inputs.pairs_note:
            pairs["trials"] = inputs.pairs_note
        return [
            MetricResult("inversion-cossim", cos_sim(recovered, target), unit="", details={"rows": len(recovered)}),
            MetricResult(
                "inversion-kl",
                kl_divergence(recovered, target, self.params.epsilon),
                unit="nats",
                details={"epsilon": self.params.epsilon},
            ),
            MetricResult(
                "inversion-acc",
                100 * acc.value,
                unit="%",
                details={"threshold": acc.threshold, "balanced": self.params.balanced_accuracy, **pairs},
            ),
            MetricResult(
                "inversion-threshold",
                acc.threshold,
                unit="cosine",
                details={"rule": "same speaker when cosine > threshold"},
            ),
            MetricResult(
                "inversion-eer",
                100 * eer.eer,
                unit="%",
                details={"threshold": eer.threshold, "variant": "step", **pairs},
            ),
            MetricResult(
                "inversion-min-dcf",
                dcf.value,
                unit="",
                details={"p_target": self.params.p_target, "threshold": dcf.threshold, **pairs},
            ),
        ]

    def _check(self, inputs: MetricInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if inputs.recovered is None or inputs.target is None or inputs.speakers is None:
            raise MetricInputError(
                f"Metric {self.name} needs recovered embeddings, target embeddings and their speakers."
            )
        recovered = np.asarray(inputs.recovered, dtype=np.float64)
        target = np.asarray(inputs.target, dtype=np.float64)
        speakers = np.asarray(inputs.speakers)
        if recovered.ndim != 2 or recovered.shape != target.shape or len(speakers) != len(recovered):
            raise MetricInputError(
                f"Metric {self.name}: recovered {recovered.shape}, target {target.shape} and {len(speakers)} speakers "
                "do not match; "
                "give one speaker per row of two [rows, dim] arrays."
            )
        if not (np.isfinite(recovered).all() and np.isfinite(target).all()):
            raise MetricInputError(f"Metric {self.name}: the embeddings hold NaN or infinite values.")
        return recovered, target, speakers
