"""Speaker-level bootstrap: resample speakers (not trials) with replacement.

Trials of one speaker are correlated, so resampling trials understates the uncertainty. A replicate
draws as many speakers as there are, with replacement; a trial is kept as often as its enrollment
speaker was drawn, which makes a replicate a weight vector over the trials and lets every metric run on
weighted tallies instead of copied arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

CHUNK = 64  # replicates drawn at once: one [CHUNK, speakers] count matrix


def speaker_weights(speakers: np.ndarray, replicates: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Per replicate, each trial's weight: how many times its speaker was drawn."""
    _, index = np.unique(np.asarray(speakers).astype(str), return_inverse=True)
    n = int(index.max()) + 1
    done = 0
    while done < replicates:
        b = min(CHUNK, replicates - done)
        draws = rng.integers(0, n, size=(b, n))
        flat = (np.arange(b)[:, None] * n + draws).ravel()
        counts = np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)
        for row in counts:
            yield row[index]
        done += b


def replicate(
    statistic: Callable[[np.ndarray], np.ndarray],
    speakers: np.ndarray,
    replicates: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """[replicates, K] values of a statistic that maps trial weights to K numbers (NaN where undefined)."""
    return np.array([np.atleast_1d(statistic(w)) for w in speaker_weights(speakers, replicates, rng)], dtype=np.float64)


def percentile_interval(values: np.ndarray, confidence: float, min_valid: float = 0.5) -> tuple[float | None, float | None]:
    """The central `confidence` interval of the replicate values, or (None, None) when fewer than
    `min_valid` of the replicates gave a number (for example a draw without any target trial)."""
    values = np.asarray(values, dtype=np.float64)
    ok = values[np.isfinite(values)]
    if len(values) == 0 or len(ok) < max(2, min_valid * len(values)):
        return None, None
    low, high = np.quantile(ok, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)
