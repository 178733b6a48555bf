"""The core's attacker contract: spinv on the fbank-rvq frontend, recovering the packaged GE2E space."""

from vpeval.testing import AttackerContract
from vpeval_spinv.presets import TINY


class TestSpInvContract(AttackerContract):
    plugin_name = "spinv"
    params = {**TINY, "stage_a_epochs": 2, "stage_b_epochs": 1, "batch_size": 8, "observed_seconds": 0.8}
    frontend_name = "fbank-rvq"
    frontend_params = {"codebook_size": 16}
