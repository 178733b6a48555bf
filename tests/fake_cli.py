"""The `vpeval` command line in its own process, with the fake plugins of fakes.py and fake_crash.py.

usage: python fake_cli.py ARGS... (the arguments of `vpeval`)
FAKE_ANONYMIZE_DELAY (seconds) slows each anonymized utterance down, so that a test can interrupt a run.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import fake_crash  # noqa: E402
import fakes  # noqa: E402

from vpeval.cli import main  # noqa: E402
from vpeval.plugins import get_plugin_manager  # noqa: E402

if __name__ == "__main__":
    delay = float(os.environ.get("FAKE_ANONYMIZE_DELAY", "0"))
    if delay:
        anonymize = fakes.FakeShift.anonymize

        def slow(self, audio, rate, voice):
            time.sleep(delay)
            return anonymize(self, audio, rate, voice)

        fakes.FakeShift.anonymize = slow
    manager = get_plugin_manager()
    manager.register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    manager.register_module(fake_crash, fake_crash.DISTRIBUTION, "0.3", name="vpeval-fake-crash:fake_crash")
    main(prog_name="vpeval")
