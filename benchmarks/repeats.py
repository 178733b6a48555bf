"""What the benchmark scripts report for a measurement repeated several times, and the timing of one run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def summary(values: list[float]) -> dict:
    """Median, range and every run of repeated measurements."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}


def spread(values: list[float], separator: str = "/") -> str:
    """'min/median/max' of repeated measurements, two decimals each (the scripts' last lines)."""
    return separator.join(f"{v:.2f}" for v in (min(values), statistics.median(values), max(values)))


def timed(call: Callable[..., Any], *args: Any) -> tuple[Any, float, float]:
    """call(*args)'s result, the CPU seconds of this process it took and its wall seconds."""
    cpu, wall = time.process_time(), time.perf_counter()
    result = call(*args)
    return result, time.process_time() - cpu, time.perf_counter() - wall
