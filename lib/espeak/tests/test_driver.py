"""The shared espeak-ng driver: speech comes back, and a forked child gets an engine of its own."""

import os

import numpy as np
import pytest

from vpeval_espeak.driver import get_engine, require_espeak


def test_a_forked_child_starts_its_own_engine_and_leaves_the_parents_running():
    parent = get_engine()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: its engine is not the parent's, and stopping it must not touch the parent's
        child = get_engine()
        os.write(write, b"1" if child is not parent else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert get_engine() is parent


def test_missing_package_is_one_sentence(monkeypatch):
    import sys

    from vpeval.errors import MissingModelError

    monkeypatch.setitem(sys.modules, "espeakng_loader", None)
    with pytest.raises(MissingModelError, match="The thing needs espeak-ng .* pip install espeakng-loader"):
        require_espeak("The thing")


def test_speech_comes_back_for_a_voice():
    engine = get_engine()
    engine.set_voice("pitch 180 220\n")
    samples = engine.synthesize("hello there")
    assert samples.dtype == np.int16 and len(samples) > engine.sample_rate // 4
    assert np.abs(samples).max() > 1000
