"""The ASR contract for whisper, with a real spoken digit when the FSDD recordings are available."""

import pytest

from vpeval.audio import read_audio
from vpeval.testing.contracts import ASRContract
from vpeval.testing.realdata import real_data_root

FSDD = real_data_root() / "fsdd" / "wav"


class TestWhisperASR(ASRContract):
    plugin_name = "whisper"
    params = {"beam_size": 2}

    def recording(self):
        if not FSDD.is_dir():
            return None
        # Whisper writes some digits as numerals ("7."): this one it writes as a word.
        audio, _ = read_audio(FSDD / "3_jackson_5.flac", sample_rate=self.plugin_class().sample_rate)
        return audio, "three"


@pytest.mark.skipif(not FSDD.is_dir(), reason="real FSDD recordings not available")
def test_the_recording_is_real_speech():
    assert TestWhisperASR().recording()[0].size > 1000
