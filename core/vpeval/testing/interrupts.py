"""For tests that Ctrl-C a child process they start."""

from __future__ import annotations

import signal


def keep_ctrl_c_live_for_children() -> None:
    """A shell's background job starts with SIGINT ignored, and a child inherits that (Python then installs
    no KeyboardInterrupt handler): restore Python's handler here so the child starts with Ctrl-C live."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
