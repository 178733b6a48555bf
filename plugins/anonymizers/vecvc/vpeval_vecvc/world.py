"""A minimal pyworld wrapper: WORLD analysis (F0, envelope, aperiodicity) and synthesis."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np


def _pyworld():
    with warnings.catch_warnings():  # pyworld imports pkg_resources, which warns on import
        warnings.simplefilter("ignore")
        import pyworld

    return pyworld


@dataclass
class WorldFeatures:
    f0: np.ndarray  # [T] Hz, 0 where unvoiced
    sp: np.ndarray  # [T, bins] spectral envelope (power)
    ap: np.ndarray | None  # [T, bins] aperiodicity; None when not analysed


def analyse(audio: np.ndarray, rate: int, frame_period: float, aperiodicity: bool = True) -> WorldFeatures:
    """dio + stonemask F0, cheaptrick envelope, d4c aperiodicity."""
    pw = _pyworld()
    x = np.ascontiguousarray(audio, dtype=np.float64)
    f0, times = pw.dio(x, rate, frame_period=frame_period)
    f0 = pw.stonemask(x, f0, times, rate)
    sp = pw.cheaptrick(x, f0, times, rate)
    # D4C's voicing check (threshold 0.85) is not reproducible call to call in pyworld 0.3.5; with a
    # negative threshold F0 alone decides voicing and reruns are bit-identical.
    ap = pw.d4c(x, f0, times, rate, threshold=-1.0) if aperiodicity else None
    return WorldFeatures(f0, sp, ap)


def synthesize(features: WorldFeatures, rate: int, length: int, frame_period: float) -> np.ndarray:
    """Exactly `length` samples of WORLD synthesis."""
    pw = _pyworld()
    y = pw.synthesize(np.ascontiguousarray(features.f0), np.ascontiguousarray(features.sp),
                      np.ascontiguousarray(features.ap), rate, frame_period)
    out = np.zeros(length)
    out[: min(length, len(y))] = y[:length]
    return out
