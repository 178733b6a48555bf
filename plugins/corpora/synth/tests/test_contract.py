"""The corpus contract for synth: labelled, readable, deterministic speech from the seed."""

from vpeval.testing.contracts import CorpusContract


class TestSynthCorpus(CorpusContract):
    plugin_name = "synth"
    params = {"preset": "tiny", "speakers": 3, "utterances": 2}
