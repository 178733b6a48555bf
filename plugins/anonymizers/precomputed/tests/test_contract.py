"""The anonymizer contract suite for precomputed, on a folder that covers the ids the suite uses.

The suite anonymizes 1 s of its own speech as utterances "u1" and "k" (without a source utterance, so
the voice key is the id); the folder here holds 1 s of another voice under those ids. Every check
applies: same length and rate, different from the input, the same output for the same voice.
"""

from __future__ import annotations

import numpy as np
import pytest
import soundfile as sf

from vpeval.testing.contracts import AnonymizerContract
from vpeval.testing.dummies import speaker_voice, synthesize

RATE = 16000


class TestPrecomputedContract(AnonymizerContract):
    plugin_name = "precomputed"
    folder: str = ""

    @property
    def params(self):
        return {"folders": [self.folder]}

    @pytest.fixture(autouse=True)
    def _covering_folder(self, tmp_path_factory):
        folder = tmp_path_factory.mktemp("precomputed-contract")
        lines = []
        for index, uid in enumerate(("k", "u1")):
            audio = synthesize(speaker_voice(3 + index), 1.0, RATE, np.random.default_rng(index))
            sf.write(folder / f"{uid}.wav", audio, RATE, subtype="PCM_16")
            lines.append(f"{uid} {folder / uid}.wav\n")
        (folder / "wav.scp").write_text("".join(lines))
        (folder / "utt2spk").write_text("k spk-k\nu1 spk-u1\n")
        type(self).folder = str(folder)
