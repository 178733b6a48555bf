"""Input checks that turn unusable scores into one clear sentence (MetricInputError)."""

from __future__ import annotations

import numpy as np

from vpeval.errors import MetricInputError


def check_scores(scores: np.ndarray, targets: np.ndarray, metric: str, subset: str = "all") -> None:
    """Refuse score sets no threshold metric can work with: empty, non-finite, one class, all equal."""
    where = f"the {subset} trials" if subset != "all" else "the trials"
    if len(scores) == 0:
        raise MetricInputError(
            f"{metric} got no scores for {where}; score at least one target and one non-target trial."
        )
    bad = ~np.isfinite(scores)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise MetricInputError(
            f"{metric} got {int(bad.sum())} NaN or infinite scores in {where} (first at trial {first}); "
            "fix the scoring step or remove those trials."
        )
    n_tar = int(np.count_nonzero(targets))
    if n_tar == 0 or n_tar == len(targets):
        missing = "target" if n_tar == 0 else "non-target"
        raise MetricInputError(
            f"{metric} needs both target and non-target trials, but {where} have no {missing} trials."
        )
    if scores.min() == scores.max():
        raise MetricInputError(
            f"{metric} cannot separate anything: all {len(scores)} scores of {where} equal {float(scores[0]):g}; "
            "check that the attacker produced real scores."
        )
