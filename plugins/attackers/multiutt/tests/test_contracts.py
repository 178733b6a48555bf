"""The core's attacker contract suite at CPU-test size: an audio system and a fusion system."""

from __future__ import annotations

import pytest

from vpeval.testing import AttackerContract
from vpeval_multiutt.params import CPU_TEST_SIZE


class TestFrameConcat(AttackerContract):
    plugin_name = "multiutt"
    params = {**CPU_TEST_SIZE, "system": "frame-concat"}


@pytest.mark.slow
class TestAudioTextFusion(AttackerContract):
    plugin_name = "multiutt"
    params = {**CPU_TEST_SIZE, "system": "audio-text", "transcripts": "corpus"}
