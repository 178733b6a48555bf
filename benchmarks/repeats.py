"""What the benchmark scripts report for a measurement repeated several times."""

from __future__ import annotations

import statistics


def summary(values: list[float]) -> dict:
    """Median, range and every run of repeated measurements."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}
