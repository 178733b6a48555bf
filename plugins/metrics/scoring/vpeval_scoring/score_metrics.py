"""The score metrics as vpeval Metric plugins. Error rates are in percent, costs in bits or unitless."""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from vpeval_scoring.cllr import actual_cllr, min_cllr, trial_costs
from vpeval_scoring.dcf import error_rates, min_dcf
from vpeval_scoring.eer import rocch_eer, step_eer
from vpeval_scoring.linkability import linkability
from vpeval_scoring.score_metric import BootstrapParams, Measurement, ScoreMetric
from vpeval_scoring.sorted_trials import SortedTrials
from vpeval_scoring.zebra import zebra


def _step(trials: SortedTrials, weights: np.ndarray | None) -> Measurement:
    r = step_eer(trials.tally(weights))
    return Measurement(100 * r.eer, {"threshold": r.threshold, "far": 100 * r.far, "frr": 100 * r.frr})


def _rocch(trials: SortedTrials, weights: np.ndarray | None) -> Measurement:
    r = rocch_eer(trials.tally(weights))
    return Measurement(100 * r.eer, {"threshold": r.threshold_high, "threshold_low": r.threshold_low})


class StepEER(ScoreMetric):
    """EER as VoicePrivacy 2024 ranks (SpeechBrain's step EER: (FAR + FRR) / 2 where |FAR - FRR| is least), %."""

    name = "eer-step"
    unit = "%"

    def measure(self, trials, weights):
        return [_step(trials, weights)]


class RocchEER(ScoreMetric):
    """EER on the ROC convex hull (BOSARIS rocch2eer, via PAV), %."""

    name = "eer-rocch"
    unit = "%"

    def measure(self, trials, weights):
        return [_rocch(trials, weights)]


class EER(ScoreMetric):
    """Equal error rate, %; the variant picks the step EER VoicePrivacy ranks by or the ROCCH-EER."""

    name = "eer"
    unit = "%"

    class Params(BootstrapParams):
        variant: Literal["step", "rocch"] = Field(
            "step", description="step: SpeechBrain/VPC 2024 EER; rocch: ROC convex hull EER."
        )

    def measure(self, trials, weights):
        m = (_step if self.params.variant == "step" else _rocch)(trials, weights)
        m.details["variant"] = self.params.variant
        return [m]


class MinDCF(ScoreMetric):
    """Normalised minimum detection cost, one result per p_target (VPC 2022: 0.01 and 0.001)."""

    name = "min-dcf"
    unit = ""

    class Params(BootstrapParams):
        p_target: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
            [0.01, 0.001], min_length=1, max_length=100, description="Target priors in (0, 1), one result each."
        )
        c_miss: float = Field(1.0, gt=0, le=1e6, description="Cost of a miss.")
        c_fa: float = Field(1.0, gt=0, le=1e6, description="Cost of a false alarm.")

    def measure(self, trials, weights):
        tally = trials.tally(weights)
        rates = error_rates(tally) if tally.n_tar > 0 and tally.n_non > 0 else None
        out = []
        for p in self.params.p_target:
            r = min_dcf(tally, p, self.params.c_miss, self.params.c_fa, rates)
            details = {
                "p_target": p,
                "c_miss": self.params.c_miss,
                "c_fa": self.params.c_fa,
                "threshold": r.threshold,
                "p_miss": r.p_miss,
                "p_fa": r.p_fa,
                # The trials behind the figure: at a small p_target it rests on a few false alarms (the report
                # warns below the rule of 30).
                "targets": float(tally.n_tar),
                "non_targets": float(tally.n_non),
            }
            out.append(Measurement(r.value, details))
        return out


class Cllr(ScoreMetric):
    """Actual Cllr in bits, reading the scores as natural-log LLRs (raw cosines give large values)."""

    name = "cllr"
    unit = "bits"

    def measure(self, trials, weights):
        if "cllr_costs" not in trials.cache:
            trials.cache["cllr_costs"] = trial_costs(trials.scores, trials.targets)
        value = actual_cllr(trials.scores, trials.targets, weights, trials.cache["cllr_costs"])
        if value == float("inf"):  # only scores read as LLRs near +-1e308 get there
            return [
                Measurement(
                    float("nan"),
                    {
                        "reason": "cllr is above 1.8e308 bits, the largest float: the scores, read as "
                        "natural-log LLRs, reach "
                        f"{float(np.abs(trials.scores).max()):.3g}; calibrate "
                        "them into LLRs first, or read min-cllr"
                    },
                )
            ]
        return [Measurement(value)]


class MinCllr(ScoreMetric):
    """Minimum Cllr in bits: Cllr after optimal (PAV) calibration, the discrimination part of Cllr."""

    name = "min-cllr"
    unit = "bits"

    def measure(self, trials, weights):
        return [Measurement(min_cllr(trials.tally(weights)))]


class Linkability(ScoreMetric):
    """Global linkability D_sys (Gomez-Barrero et al. 2017) between 0 (unlinkable) and 1."""

    name = "linkability"
    unit = ""

    class Params(BootstrapParams):
        omega: float = Field(1.0, gt=0, le=1e6, description="Prior ratio P(mated) / P(non-mated).")
        bins: int | None = Field(None, ge=1, le=10_000, description="Histogram bins; None: min(#mated / 10, 100).")

    def measure(self, trials, weights):
        r = linkability(trials.scores, trials.targets, weights, self.params.omega, self.params.bins)
        details = {"bins": r.n_bins, "omega": self.params.omega}
        if r.reason is not None:
            details["reason"] = f"linkability is undefined here: {r.reason}"
        return [Measurement(r.value, details)]


class ZEBRA(ScoreMetric):
    """ZEBRA (Nautsch et al. 2020): expected privacy disclosure in bits and the worst-case tag 0, A-F."""

    name = "zebra"
    unit = "bits"
    result_metrics = ("zebra-dece", "zebra-worst-case")

    def measure(self, trials, weights):
        r = zebra(trials.tally(weights))
        return [
            Measurement(r.dece, {"tag": r.tag, "max_abs_log10_lr": r.max_abs_log10_lr}, metric="zebra-dece"),
            Measurement(r.max_abs_log10_lr, {"tag": r.tag}, metric="zebra-worst-case", unit="log10 LR"),
        ]
