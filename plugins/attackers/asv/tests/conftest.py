"""Settings the asv tests share."""

from __future__ import annotations

from types import MappingProxyType

import pytest


@pytest.fixture(scope="session")
def tiny_ecapa():
    """A tiny ECAPA that trains on the dummy corpus in seconds: constant learning rate, a quarter of the speakers
    held out for validation, every epoch run (read-only: a test that needs other settings copies them)."""
    return MappingProxyType(
        {
            "channels": [32, 32, 32, 32, 96],
            "embedding_dim": 32,
            "epochs": 8,
            "batch_size": 16,
            "crop_seconds": 1.0,
            "lr": 0.005,
            "lr_schedule": "constant",
            "validation_share": 0.25,
            "patience": None,
        }
    )
