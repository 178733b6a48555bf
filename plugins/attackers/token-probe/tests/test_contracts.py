"""The core's attacker contract, token-probe on the fbank-rvq frontend."""

from vpeval.testing import AttackerContract


class TestTokenProbeContract(AttackerContract):
    plugin_name = "token-probe"
    frontend_name = "fbank-rvq"
    frontend_params = {"codebook_size": 16}
