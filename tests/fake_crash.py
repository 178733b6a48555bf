"""A plugin with a bug, for tests of the command line's error boundary.

`fake-crash` is an anonymizer whose anonymize raises a ZeroDivisionError (not a UserError): the
boundary must call it a bug in this plugin's distribution and keep the traceback in a file.
"""

from __future__ import annotations

import numpy as np

from vpeval import hookimpl
from vpeval.api import Anonymizer, Voice

DISTRIBUTION = "vpeval-fake-crash"


class FakeCrash(Anonymizer):
    """Divides by zero on the first utterance."""

    name = "fake-crash"

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        return audio * divide_by_zero()


def divide_by_zero() -> float:
    return 1 / 0


@hookimpl
def register_anonymizers(register):
    register(FakeCrash)
