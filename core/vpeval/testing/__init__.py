"""Test helpers that plugin packages reuse: contract suites per plugin kind and tiny fake data.

Subclass a contract in your plugin's tests and set `plugin_name` and `params`:

    from vpeval.testing import AnonymizerContract

    class TestMyAnonymizer(AnonymizerContract):
        plugin_name = "my-anonymizer"
        params = {"strength": 0.5}
"""

from vpeval.testing.contracts import (
    AnonymizerContract,
    ASRContract,
    AttackerContract,
    CorpusContract,
    EncoderContract,
    ExecutorContract,
    FrontendContract,
    MetricContract,
    ReportContract,
)
from vpeval.testing.dummies import make_corpus, speaker_voice, synthesize

__all__ = [
    "AnonymizerContract",
    "ASRContract",
    "AttackerContract",
    "CorpusContract",
    "EncoderContract",
    "ExecutorContract",
    "FrontendContract",
    "MetricContract",
    "ReportContract",
    "make_corpus",
    "speaker_voice",
    "synthesize",
]
