"""Test helpers that plugin packages reuse: contract suites per plugin kind and tiny fake data.

Subclass a contract in your plugin's tests and set `plugin_name` and `params`:

    from vpeval.testing import AnonymizerContract

    class TestMyAnonymizer(AnonymizerContract):
        plugin_name = "my-anonymizer"
        params = {"strength": 0.5}
"""

from vpeval.testing.contracts import (
    AnonymizerContract,
    AttackerContract,
    EncoderContract,
    FrontendContract,
    MetricContract,
)
from vpeval.testing.dummies import make_corpus

__all__ = [
    "AnonymizerContract",
    "AttackerContract",
    "EncoderContract",
    "FrontendContract",
    "MetricContract",
    "make_corpus",
]
