"""Frames kept in memory within a budget (content-keyed disk caches are the core's vpeval.content_cache)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np


class MemoryCache:
    """Arrays by key up to a byte budget, least recently used out."""

    def __init__(self, budget_mb: int):
        self.budget = budget_mb * 1024 * 1024
        self.used = 0
        self.items: OrderedDict[Any, np.ndarray] = OrderedDict()

    def get(self, key: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
        value = self.items.get(key)
        if value is not None:
            self.items.move_to_end(key)
            return value
        value = make()
        if value.nbytes <= self.budget:
            self.items[key] = value
            self.used += value.nbytes
            while self.used > self.budget:
                _, old = self.items.popitem(last=False)
                self.used -= old.nbytes
        return value
