"""The privacy gate on an attacker's O-O scores.

An attacker that cannot verify original speech says little about anonymized speech: its high EER on
anonymized trials may be its own weakness, not the anonymizer's protection (a poorly trained attacker
overstated privacy by up to 74 % relative in arXiv 2507.22534). So on each O-O score set the gate computes
the attacker's EER (the step EER VoicePrivacy ranks by) and, above the declared bound, closes: its row
carries details {"gate": {"fires": true, "reason": ...}}, which the core's report reads to mark every
privacy figure of that attacker (and the worst case it reaches) as an upper bound, naming the gate. The
other half of the rule, training flagged as incomplete, is the report's under-training alarm (a validation
EER still falling), marked the same way.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params
from vpeval.errors import MetricInputError
from vpeval.stats import eer
from vpeval.types import MetricResult

RULE = "the attacker's O-O EER must be at most the bound for its O-A / A-A figures to count as privacy"


class PrivacyGate(Metric):
    """The attacker's O-O EER (%) against a declared bound; above it, its privacy figures are upper bounds."""

    name = "privacy-gate"
    needs: ClassVar[str] = "scores"

    class Params(Params):
        max_original_eer: float = Field(
            10.0,
            gt=0.0,
            lt=50.0,
            description="The highest O-O EER (%) at which an attacker's figures on anonymized speech count as "
            "privacy; above it they are upper bounds.",
        )

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        protocol = inputs.attributes.get("protocol")
        if protocol not in (None, "", "O-O"):
            return []  # the gate reads the attacker on original speech only
        s = inputs.scores
        if s is None or s.targets.all() or not s.targets.any():
            raise MetricInputError(f"Metric {self.name} needs O-O scores with target and non-target trials.")
        if not np.isfinite(s.scores).all():
            raise MetricInputError(f"Metric {self.name}: the O-O scores have NaN or infinite values.")
        value = 100.0 * eer(s.scores, s.targets)
        bound = self.params.max_original_eer
        fires = value > bound
        reason = (
            f"failed the privacy gate: its O-O EER {value:.1f} % is above the bound {bound:g} %, so it cannot "
            "verify original speech and every privacy figure it produced is an upper bound"
        )
        details = {
            "gate": {"name": self.name, "fires": bool(fires), "bound": bound, "reason": reason if fires else ""},
            "rule": RULE,
            "trials": len(s),
        }
        return [MetricResult(self.name, value, "all", unit="%", details=details)]
