"""The anonymizer contract suite for world-shift: default ranges, and fixed upward shifts."""

from vpeval.testing.contracts import AnonymizerContract


class TestWorldShiftContract(AnonymizerContract):
    plugin_name = "world-shift"
    params = {}


class TestWorldShiftFixedContract(AnonymizerContract):
    plugin_name = "world-shift"
    params = {"f0_semitones": [4, 4], "formant_ratio": [1.1, 1.1], "direction": "up", "f0_method": "harvest"}
