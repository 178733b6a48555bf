import os

import numpy as np
import pytest
import soundfile as sf

from vpeval.audio import check_audio, measure_audio, read_audio, resample, write_audio
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


# -- headers that cannot be speech, and paths that are not files: refused before any data is read ----------


def _tone(seconds=0.5, rate=16000):
    return (0.3 * np.sin(np.arange(int(seconds * rate)) * 0.05)).astype(np.float32)


def _refusal(path, reader=read_audio) -> str:
    with pytest.raises(BadAudioError) as err:
        reader(path)
    message = str(err.value)
    assert message.startswith(f"Audio file {path} cannot be used: ") and "\n" not in message
    return message


@pytest.mark.parametrize("reader", [read_audio, check_audio, measure_audio])
def test_a_1_hz_header_is_refused_before_resampling(tmp_path, reader):
    path = tmp_path / "one-hz.wav"
    sf.write(path, _tone(), 1, subtype="PCM_16")  # 8000 "seconds" at 1 Hz: resampled, a 128-million-sample array
    message = _refusal(path, reader)
    assert "sample rate of 1 Hz" in message and "1000 to 384000 Hz" in message


def test_a_wav_cut_after_its_header_is_refused_not_read_short(tmp_path):
    path = tmp_path / "cut.wav"
    sf.write(path, _tone(1.0), 16000, subtype="PCM_16")
    data = path.read_bytes()
    path.write_bytes(data[: 44 + len(data[44:]) // 10])  # the header promises 10x the frames stored
    assert sf.read(path)[0].shape == (1600,)  # soundfile alone reads the stump as a shorter utterance
    for reader in (read_audio, check_audio, measure_audio):
        assert "it is cut short: its header promises 32000 bytes of audio data, the file holds 3200" in _refusal(
            path, reader
        )
    # Within the tolerance: a few bytes short, as when a writer leaves out the pad byte after odd-sized data.
    path.write_bytes(data[:-3])
    assert read_audio(path)[0].shape == (15998,)


@pytest.mark.parametrize("fmt", ["AIFF", "AU", "W64", "NIST"])
def test_other_uncompressed_formats_cut_short_are_refused(tmp_path, fmt):
    path = tmp_path / f"cut.{fmt.lower()}"
    sf.write(path, _tone(1.0), 16000, format=fmt, subtype="PCM_16")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 4])
    assert "it is cut short" in _refusal(path)


def test_a_headerless_raw_file_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "speech.raw"
    path.write_bytes((_tone() * 32767).astype("<i2").tobytes())
    for reader in (read_audio, check_audio, measure_audio):  # a TypeError from soundfile before
        message = _refusal(path, reader)
        assert "headerless raw audio" in message and "convert it to WAV or FLAC" in message


@pytest.mark.parametrize("reader", [read_audio, check_audio, measure_audio])
def test_zero_frames_are_refused(tmp_path, reader):
    path = tmp_path / "none.wav"
    sf.write(path, np.zeros(0, dtype=np.float32), 16000, subtype="PCM_16")
    assert "it holds no samples" in _refusal(path, reader)


def _patch_wav(path, *, channels=None, rate=None):
    data = bytearray(path.read_bytes())
    fmt = data.index(b"fmt ") + 8
    if channels is not None:
        data[fmt + 2 : fmt + 4] = int(channels).to_bytes(2, "little")
    if rate is not None:
        data[fmt + 4 : fmt + 8] = int(rate).to_bytes(4, "little")
    path.write_bytes(bytes(data))


def test_absurd_channel_counts_and_rates_are_refused(tmp_path):
    path = tmp_path / "channels.wav"
    sf.write(path, np.zeros((4000, 1), dtype=np.float32) + 0.1, 16000, subtype="PCM_16")
    _patch_wav(path, channels=200)  # 200 channels of 20 frames each, as soundfile reads the header
    assert "its header gives 200 channels, where audio has 1 to 64" in _refusal(path)
    path = tmp_path / "fast.wav"
    sf.write(path, _tone(), 16000, subtype="PCM_16")
    _patch_wav(path, rate=2_000_000)
    assert "sample rate of 2000000 Hz" in _refusal(path)


def test_an_utterance_longer_than_the_bound_is_refused(tmp_path, monkeypatch):
    import vpeval.audio as audio

    path = tmp_path / "long.wav"
    sf.write(path, _tone(3.0, 8000), 8000, subtype="PCM_16")
    assert read_audio(path)[0].shape == (24000,)
    monkeypatch.setattr(audio, "MAX_SECONDS", 2.0)  # the same check as at one hour, without an hour of audio
    assert "it lasts 3 s, more than the 2 s an utterance may last" in _refusal(path)


def test_a_flac_without_its_length_is_refused(tmp_path):
    path = tmp_path / "stream.flac"
    sf.write(path, _tone(), 16000)
    data = bytearray(path.read_bytes())
    data[8 + 13] &= 0xF0  # STREAMINFO's 36-bit total-samples field set to 0: "unknown", as a streaming encoder writes
    data[8 + 14 : 8 + 18] = b"\0\0\0\0"
    path.write_bytes(bytes(data))
    assert "its header does not give its length" in _refusal(path)  # "array is too big" from numpy before


@pytest.mark.parametrize("reader", [read_audio, check_audio, measure_audio])
def test_paths_that_are_not_files_are_refused_without_opening(tmp_path, reader):
    fifo = tmp_path / "pipe.wav"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    assert "is a named pipe" in _refusal(fifo, reader)
    link = tmp_path / "zero.wav"
    link.symlink_to("/dev/zero")  # reading it would never end
    assert "is a device" in _refusal(link, reader) and "the link leads to /dev/zero" in _refusal(link, reader)
    assert "is a folder" in _refusal(tmp_path, reader)


def test_valid_audio_reads_exactly_as_soundfile_reads_it(tmp_path):
    rng = np.random.default_rng(3)
    stereo = rng.uniform(-0.9, 0.9, (8001, 2)).astype(np.float32)
    for name, subtype in (("a.wav", "PCM_16"), ("b.wav", "FLOAT"), ("c.flac", "PCM_24")):
        path = tmp_path / name
        sf.write(path, stereo, 16000, subtype=subtype)
        expected = sf.read(path, dtype="float32", always_2d=True)[0]
        assert read_audio(path, channel=1)[0].tobytes() == np.ascontiguousarray(expected[:, 1]).tobytes()
        assert read_audio(path)[0].tobytes() == expected.mean(axis=1).astype(np.float32).tobytes()
