"""Puts this folder on sys.path for threedspeaker_testing (the helpers), and the one-sentence check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def one_sentence():
    """Checks that an error message is one sentence on one line."""

    def check(message: str) -> str:
        assert "\n" not in message and message.rstrip().endswith("."), message
        assert ". " not in message, f"more than one sentence: {message}"
        return message

    return check
