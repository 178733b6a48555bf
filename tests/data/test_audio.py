import numpy as np
import pytest
import soundfile as sf

from vpeval.data.audio import check_audio, read_audio, resample, write_audio
from vpeval.errors import BadAudioError

from .conftest import REAL, needs_real

FSDD_FILE = REAL / "fsdd" / "wav" / "0_george_0.flac"


@needs_real("fsdd")
def test_fsdd_8k_file_resamples_to_16k_with_the_same_duration():
    audio8, rate8 = read_audio(FSDD_FILE)
    audio16, rate16 = read_audio(FSDD_FILE, sample_rate=16000)
    assert (rate8, rate16) == (8000, 16000)
    assert audio16.dtype == np.float32 and audio16.ndim == 1
    assert abs(len(audio16) / 16000 - len(audio8) / 8000) < 1e-3
    # Same signal: energy is kept and the band below 4 kHz matches the original's spectrum.
    assert np.sqrt(np.mean(audio16**2)) == pytest.approx(np.sqrt(np.mean(audio8**2)), rel=0.05)
    assert check_audio(FSDD_FILE) == (len(audio8), 8000)


def test_resample_keeps_a_tone_at_its_frequency():
    t = np.arange(8000) / 8000
    tone = np.sin(2 * np.pi * 440 * t).astype(np.float32)
    up = resample(tone, 8000, 16000)
    assert len(up) == 16000
    peak_hz = np.argmax(np.abs(np.fft.rfft(up))) * 16000 / len(up)
    assert abs(peak_hz - 440) <= 1
    assert resample(tone, 8000, 8000) is not None and len(resample(tone, 8000, 8000)) == 8000


def test_stereo_is_averaged_unless_a_channel_is_picked(tmp_path):
    left = np.full(100, 0.5, dtype=np.float32)
    right = np.full(100, -0.25, dtype=np.float32)
    path = tmp_path / "stereo.wav"
    sf.write(path, np.stack([left, right], axis=1), 16000, subtype="FLOAT")
    assert np.allclose(read_audio(path)[0], 0.125)
    assert np.allclose(read_audio(path, channel=1)[0], -0.25)
    with pytest.raises(BadAudioError, match="channel 2 does not exist"):
        read_audio(path, channel=2)


def test_write_is_pcm16_wav_clipped_and_leaves_no_temporary_file(tmp_path):
    audio = np.array([0.0, 0.5, -0.5, 1.7, -3.0], dtype=np.float32)
    path = write_audio(tmp_path / "sub" / "out.wav", audio, 16000)
    info = sf.info(path)
    assert (info.format, info.subtype, info.samplerate) == ("WAV", "PCM_16", 16000)
    back, _ = read_audio(path)
    assert np.allclose(back, np.clip(audio, -1, 1), atol=1e-4)
    assert sorted(p.name for p in path.parent.iterdir()) == ["out.wav"]


def _bad_files(tmp_path):
    good = tmp_path / "good.wav"
    sf.write(good, np.random.default_rng(0).uniform(-0.5, 0.5, 16000).astype(np.float32), 16000, subtype="PCM_16")
    data = good.read_bytes()
    (tmp_path / "empty.wav").write_bytes(b"")
    (tmp_path / "garbage.wav").write_bytes(b"this is not audio at all" * 10)
    (tmp_path / "truncated.wav").write_bytes(data[:30])
    sf.write(tmp_path / "silent0.wav", np.zeros(0, dtype=np.float32), 16000)
    return {
        "missing.wav": "does not exist",
        "empty.wav": "empty",
        "garbage.wav": "cannot read",
        "truncated.wav": "cannot read",
        "silent0.wav": "no samples",
    }


@pytest.mark.parametrize("reader", [check_audio, read_audio])
def test_unusable_files_give_one_sentence_naming_the_file(tmp_path, reader):
    for name, reason in _bad_files(tmp_path).items():
        with pytest.raises(BadAudioError) as err:
            reader(tmp_path / name)
        message = str(err.value)
        assert str(tmp_path / name) in message and reason in message, message
        assert message.count(".") >= 1 and "\n" not in message


def test_data_cut_after_a_valid_header_is_caught_by_the_cheap_check(tmp_path):
    path = tmp_path / "cut.flac"
    sf.write(path, np.random.default_rng(1).uniform(-0.5, 0.5, 48000).astype(np.float32), 16000)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BadAudioError, match="cut.flac"):
        check_audio(path)
