"""Speaker-level bootstrap: resample speakers (not trials) with replacement.

Trials of one speaker are correlated, so resampling trials understates the uncertainty. A replicate
draws as many speakers as there are, with replacement; a trial is kept as often as its enrollment
speaker was drawn, which makes a replicate a weight vector over the trials and lets every metric run on
weighted tallies instead of copied arrays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# The replicate weights and the interval are shared with the speech metrics, so they live in the core.
from vpeval.stats import percentile_interval, speaker_weights

__all__ = ["percentile_interval", "replicate", "speaker_weights"]


def replicate(
    statistic: Callable[[np.ndarray], np.ndarray],
    speakers: np.ndarray,
    replicates: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """[replicates, K] values of a statistic that maps trial weights to K numbers (NaN where undefined)."""
    return np.array([np.atleast_1d(statistic(w)) for w in speaker_weights(speakers, replicates, rng)], dtype=np.float64)
