"""Shared fixtures: tiny configurations, a short harmonic utterance, the one-sentence check."""

import numpy as np
import pytest

from vpeval_slm_frontends.tiny import HIGGS, KIMI_TOKENIZER, KIMI_WHISPER, MIMI, QWEN


@pytest.fixture(scope="session")
def speech():
    """2.3 s of harmonic 'speech' at 16 and 24 kHz."""
    from vpeval.testing.dummies import speaker_voice, synthesize

    voice = speaker_voice(0)
    return {rate: synthesize(voice, 2.3, rate, np.random.default_rng(0)) for rate in (16000, 24000)}


@pytest.fixture(scope="session")
def tiny():
    return {"mimi": MIMI, "higgs": HIGGS, "qwen": QWEN, "kimi_tokenizer": KIMI_TOKENIZER, "kimi_whisper": KIMI_WHISPER}


@pytest.fixture(scope="session")
def one_sentence():
    """A user error message is one sentence: one line, one final full stop."""
    return lambda message: "\n" not in message and message.endswith(".") and ". " not in message
