"""The core's attacker contract suite, at CPU-test size (fbank stream; and the mid-level dual stream)."""

from __future__ import annotations

from vpeval.testing import AttackerContract
from vpeval_dast.params import CPU_TEST_SIZE


class TestDastAttacker(AttackerContract):
    plugin_name = "dast"
    params = CPU_TEST_SIZE
