"""write_audio gives the same bytes for the same samples: libsndfile stamps a float WAV's PEAK chunk with the
time of writing, which made equal audio hash differently and missed every cache step downstream of it."""

from __future__ import annotations

import time

import numpy as np
import pytest
import soundfile as sf

from vpeval.audio import write_audio


@pytest.mark.parametrize("subtype", ["FLOAT", "PCM_16"])
def test_same_samples_same_bytes_at_different_times(tmp_path, subtype):
    samples = (1.7 * np.sin(np.arange(1600) / 3.0)).astype(np.float32)  # peaks above 1: kept as float
    first = write_audio(tmp_path / "a.wav", samples, 16000, subtype=subtype).read_bytes()
    time.sleep(1.1)  # the stamp counts seconds
    second = write_audio(tmp_path / "b.wav", samples, 16000, subtype=subtype).read_bytes()
    assert first == second
    read, rate = sf.read(tmp_path / "b.wav", dtype="float32")
    assert rate == 16000
    expected = samples if subtype == "FLOAT" else np.clip(samples, -1, 1)
    assert np.allclose(read, expected, atol=1 / 32768)
    if subtype == "FLOAT":
        assert b"PEAK" in first[:256] and np.array_equal(read, samples)  # the chunk stays, only its stamp is zero
