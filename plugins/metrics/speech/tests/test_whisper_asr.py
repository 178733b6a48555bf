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


def test_describe_names_ctranslate2_kernel_settings(monkeypatch):
    """Transcripts differ between kernel paths (scripts/portable-kernels.sh against native MKL): a run names them
    where its WER rows say which ASR transcribed, and its transcripts are cached apart."""
    asr = WhisperASR(context=PluginContext(threads=1))
    for name in ("CT2_FORCE_CPU_ISA", "CT2_USE_MKL", "ONEDNN_MAX_CPU_ISA"):
        monkeypatch.delenv(name, raising=False)
    native = asr.describe()
    assert "kernels" not in native
    monkeypatch.setenv("CT2_FORCE_CPU_ISA", "AVX2")
    monkeypatch.setenv("CT2_USE_MKL", "0")
    portable = asr.describe()
    assert portable.endswith(", kernels CT2_FORCE_CPU_ISA=AVX2 CT2_USE_MKL=0") and portable != native
