"""A tiny release folder (random weights, published layout) shared by the tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from sslsas_testing import write_release  # noqa: E402


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> Path:
    return write_release(tmp_path_factory.mktemp("sslsas-release") / "pretrained_models_anon_xv")
