"""True-positive rate at a fixed false-positive rate: how often an attacker links a speaker while
accepting at most a given share of impostors (the operating points re-identification attacks use).

Threshold rule: a trial is accepted when its score is >= the threshold; among the thresholds whose
false-positive rate (accepted non-targets / non-targets) is at most the asked FPR, the lowest one is
taken, so the TPR is the largest one that FPR allows. ROC points are not interpolated: the value is a
rate some real threshold reaches. With fewer non-targets than the FPR can resolve (FPR x non-targets
below `min_false_alarms`, for example under 1000 non-targets at 0.1 %), no false alarm would be allowed
and the value would be the TPR at FPR 0: it is reported as NaN with that reason instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from vpeval_scoring.score_metric import BootstrapParams, Measurement, ScoreMetric
from vpeval_scoring.sorted_trials import Tally

NAN = float("nan")
THRESHOLD_RULE = (
    "accept score >= threshold; the lowest threshold whose FPR is at most the asked one (no ROC interpolation)"
)


@dataclass(frozen=True)
class TprAtFpr:
    tpr: float  # fraction; NaN when the non-targets cannot resolve the FPR
    threshold: float  # lowest accepted score (inf: nothing accepted)
    fpr: float  # the false-positive rate reached at that threshold
    false_alarms: float
    non_targets: float
    reason: str | None = None


def tpr_at_fpr(tally: Tally, fpr: float, min_false_alarms: float = 1.0) -> TprAtFpr:
    """TPR at the lowest threshold (accept score >= it) whose FPR is at most `fpr`."""
    n_tar, n_non = tally.n_tar, tally.n_non
    if n_tar <= 0 or n_non <= 0:
        return TprAtFpr(NAN, NAN, NAN, NAN, float(n_non), "it needs target and non-target trials")
    allowed = fpr * n_non
    # A relative slack absorbs float rounding of fpr * n (0.001 * 3000 is 3.0000000000000004).
    if allowed < min_false_alarms * (1 - 1e-9):
        needed = math.ceil(min_false_alarms / fpr - 1e-9)
        return TprAtFpr(
            NAN,
            NAN,
            NAN,
            NAN,
            float(n_non),
            f"an FPR of {100 * fpr:g} % needs at least {needed} non-target trials (here {float(n_non):g}): "
            "fewer would allow no false alarm, which measures the TPR at FPR 0",
        )
    # Accepting scores >= values[k] accepts everything from k upward.
    accepted_non = n_non - (np.cumsum(tally.non) - tally.non)
    accepted_tar = n_tar - (np.cumsum(tally.tar) - tally.tar)
    ok = accepted_non <= allowed * (1 + 1e-12)
    if not ok.any():  # only 'accept nothing' keeps the FPR (every distinct score carries a false alarm)
        return TprAtFpr(0.0, float("inf"), 0.0, 0.0, float(n_non))
    k = int(np.argmax(ok))  # accepted counts fall with k: the first that fits is the lowest threshold
    return TprAtFpr(
        float(accepted_tar[k] / n_tar),
        float(tally.values[k]),
        float(accepted_non[k] / n_non),
        float(accepted_non[k]),
        float(n_non),
    )


class TPRAtFPR(ScoreMetric):
    """True-positive rate (%) at fixed false-positive rates (default 1 % and 0.1 %), one result per FPR."""

    name = "tpr-at-fpr"
    unit = "%"

    class Params(BootstrapParams):
        fpr: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
            [0.01, 0.001],
            min_length=1,
            max_length=100,
            description="False-positive rates in (0, 1), one result each (0.01 = 1 %).",
        )
        min_false_alarms: int = Field(
            1,
            ge=1,
            le=1_000_000,
            description="The least number of false alarms an FPR must allow (FPR x non-target trials); below it "
            "the result is NaN with the reason (1: at least 1/FPR non-targets).",
        )

    def compute(self, inputs):
        """The shared per-gender results; the f/m average rows also say which FPR they are for (and why one
        is undefined), as the per-gender rows do."""
        results = super().compute(inputs)
        averages = [r for r in results if r.gender == "avg"]  # none without both genders
        for fpr, row in zip(self.params.fpr if averages else [], averages, strict=True):
            row.details["fpr"] = fpr
            if math.isnan(row.value):
                row.details["reason"] = "tpr-at-fpr is undefined here: the f or the m trials cannot resolve this FPR"
        return results

    def measure(self, trials, weights):
        tally = trials.tally(weights)
        out = []
        for fpr in self.params.fpr:
            r = tpr_at_fpr(tally, fpr, self.params.min_false_alarms)
            details = {
                "fpr": fpr,
                "threshold": r.threshold,
                "fpr_reached": None if math.isnan(r.fpr) else r.fpr,  # a fraction, as fpr
                "false_alarms": r.false_alarms,
                "non_targets": r.non_targets,
                "threshold_rule": THRESHOLD_RULE,
            }
            if r.reason is not None:
                details["reason"] = f"tpr-at-fpr is undefined here: {r.reason}"
            out.append(Measurement(100 * r.tpr, details))
        return out
