import pytest

from vpeval.api import PluginContext
from vpeval.audio import read_audio
from vpeval.errors import MissingModelError
from vpeval.testing.realdata import real_data_root
from vpeval_speech.normalize import normalize_text
from vpeval_speech.whisper_asr import WhisperASR

FSDD = real_data_root() / "fsdd" / "wav"
DIGITS = {"3_jackson_5": "three", "7_theo_12": "seven", "9_yweweler_3": "nine"}


@pytest.mark.skipif(not FSDD.is_dir(), reason="real FSDD recordings not available")
def test_packaged_tiny_en_transcribes_real_digits():
    asr = WhisperASR(context=PluginContext(threads=1))
    for name, word in DIGITS.items():
        audio, _ = read_audio(FSDD / f"{name}.flac", sample_rate=asr.sample_rate)
        transcript = asr.transcribe(audio)
        assert normalize_text(transcript.text) == word
        assert transcript.words and 0.0 <= transcript.words[0][1] <= transcript.words[-1][2] <= 1.5
    assert "tiny.en" in asr.describe()


def test_missing_model_directory_names_the_parameter(tmp_path):
    asr = WhisperASR(WhisperASR.Params(model_path=str(tmp_path / "nowhere")))
    with pytest.raises(MissingModelError, match="model_path points at .*nowhere.*model.bin"):
        asr.model_dir()


def test_directory_without_model_files_is_refused(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    asr = WhisperASR(WhisperASR.Params(model_path=str(tmp_path)))
    with pytest.raises(MissingModelError, match="not a CTranslate2 Whisper model directory"):
        asr.model_dir()
