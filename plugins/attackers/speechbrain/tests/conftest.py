"""Fixtures over the tiny random-weight SpeechBrain folders of vpeval_speechbrain.tiny (VoicePrivacy's
exp/asv_orig layout), and speechbrain's own loader as the tests' reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpeval_speechbrain.tiny import write_ecapa_folder, write_xvector_folder


def reference_classifier(folder: Path, savedir: Path):
    """speechbrain's own loader on the same folder: the test's reference (it runs the test's own YAML)."""
    from speechbrain.inference.speaker import EncoderClassifier

    return EncoderClassifier.from_hparams(source=str(folder), savedir=str(savedir), run_opts={"device": "cpu"})


def random_audio(seconds: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * 16000)) / 16000
    tone = 0.3 * np.sin(2 * np.pi * (120 + 40 * seed) * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    return (tone + rng.normal(0, 0.05, t.size)).astype(np.float32)


@pytest.fixture
def ecapa_folder(tmp_path):
    return write_ecapa_folder(tmp_path / "asv_orig")


@pytest.fixture
def folders():
    """The writers, for tests that need other variants."""
    return {"ecapa": write_ecapa_folder, "xvector": write_xvector_folder}


@pytest.fixture
def reference():
    return reference_classifier


@pytest.fixture
def audio():
    return random_audio
