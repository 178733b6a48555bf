"""Runs a fake experiment in its own process, for tests of concurrent and killed runs.

usage: python fake_run_script.py EXPERIMENT.yaml CACHE OUTPUT
FAKE_ANONYMIZE_DELAY (seconds) slows each anonymized utterance down so that runs overlap.
Prints {"executed": ...} of the run's result as JSON on stdout.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import fakes  # noqa: E402

from vpeval.config import load_experiment  # noqa: E402
from vpeval.plugins import get_plugin_manager  # noqa: E402
from vpeval.run.runner import Runner  # noqa: E402


def main() -> None:
    experiment, cache, output = sys.argv[1:4]
    delay = float(os.environ.get("FAKE_ANONYMIZE_DELAY", "0"))
    if delay:
        anonymize = fakes.FakeShift.anonymize

        def slow(self, audio, rate, voice):
            time.sleep(delay)
            return anonymize(self, audio, rate, voice)

        fakes.FakeShift.anonymize = slow
    get_plugin_manager().register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    result = Runner(load_experiment(experiment), cache_root=cache, output=output, quiet=True).run()
    print(json.dumps({"executed": result.executed}))


if __name__ == "__main__":
    main()
