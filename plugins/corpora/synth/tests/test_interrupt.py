"""Ctrl-C during a parallel synth generation: the caller reports it once; the spawned workers and their
espeak-ng servers print no traceback and do not go on generating the queued speakers."""

import os
import signal
import subprocess
import sys
import textwrap
import time

from vpeval.testing.interrupts import keep_ctrl_c_live_for_children

SCRIPT = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from vpeval.api import PluginContext
    from vpeval_synth.source import SynthCorpus

    if __name__ == "__main__":  # spawned workers import this file too
        source = SynthCorpus(SynthCorpus.Params(preset="tiny", speakers=8, utterances=40, workers=2),
                             PluginContext(seed=0, work_dir=Path(sys.argv[1])))
        try:
            source.load()
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(130)
    """)


def test_ctrl_c_mid_parallel_generation_is_quiet_and_prompt(tmp_path):
    script = tmp_path / "generate.py"
    script.write_text(SCRIPT)
    work = tmp_path / "work"
    keep_ctrl_c_live_for_children()
    process = subprocess.Popen(
        [sys.executable, str(script), str(work)],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        deadline = time.monotonic() + 90
        while (
            not list(work.glob("synth-*.partial-*/audio/*/*.wav"))
            and time.monotonic() < deadline
            and process.poll() is None
        ):
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()[1]
        os.killpg(process.pid, signal.SIGINT)
        sent = time.monotonic()
        err = process.communicate(timeout=30)[1]
        seconds = time.monotonic() - sent
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130 and err.strip() == "interrupted", err
    assert seconds < 5  # the queued speakers were dropped, not generated first
