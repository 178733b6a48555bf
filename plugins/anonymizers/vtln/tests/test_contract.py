"""The anonymizer contract suite for vtln: default (bilinear, whole spectrum) and piecewise-linear envelope."""

from vpeval.testing.contracts import AnonymizerContract


class TestVTLNContract(AnonymizerContract):
    plugin_name = "vtln"
    params = {}


class TestVTLNEnvelopeContract(AnonymizerContract):
    plugin_name = "vtln"
    params = {"warping": "piecewise-linear", "target": "envelope", "factor": [1.2, 1.2], "direction": "down"}
