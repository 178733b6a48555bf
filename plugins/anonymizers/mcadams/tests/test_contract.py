"""The anonymizer contract suite for mcadams, with a fixed and a drawn alpha."""

from vpeval.testing.contracts import AnonymizerContract


class TestMcAdamsContract(AnonymizerContract):
    plugin_name = "mcadams"
    params = {}


class TestMcAdamsRangeContract(AnonymizerContract):
    plugin_name = "mcadams"
    params = {"alpha_range": [0.5, 0.9]}
