"""Audio files in and out: soundfile for reading and writing, soxr for resampling.

Every problem with a file a user gave us becomes a `BadAudioError` that names the file and says why.
torchaudio.load is avoided on purpose: it needs FFmpeg, soundfile does not.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from vpeval.errors import BadAudioError

RESAMPLE_QUALITY = "HQ"


def check_audio(path: str | os.PathLike) -> tuple[int, int]:
    """(frames, sample rate) of a file after a cheap sanity check: header and the last frame only.

    Reading the last frame catches files whose data was cut short after a valid header.
    """
    path = str(path)
    info = _info(path)
    if info.frames <= 0:
        raise BadAudioError(path, "it holds no samples")
    if info.samplerate <= 0 or info.channels <= 0:
        raise BadAudioError(path, f"its header is invalid ({info.samplerate} Hz, {info.channels} channels)")
    try:
        with sf.SoundFile(path) as f:
            f.seek(info.frames - 1)
            last = f.read(1, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise BadAudioError(path, f"its data is corrupt or cut short ({_short(exc)})") from exc
    if len(last) != 1:
        raise BadAudioError(path, "its data is cut short (fewer samples than the header says)")
    return info.frames, info.samplerate


def read_audio(
    path: str | os.PathLike, sample_rate: int | None = None, channel: int | None = None
) -> tuple[np.ndarray, int]:
    """Mono float32 samples and their rate, resampled to `sample_rate` when given.

    Channels are averaged unless `channel` picks one (0-based).
    """
    path = str(path)
    if not os.path.isfile(path):
        raise BadAudioError(path, "the file does not exist")
    try:
        data, rate = sf.read(path, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise BadAudioError(path, f"soundfile cannot read it ({_short(exc)})") from exc
    if data.shape[0] == 0:
        raise BadAudioError(path, "it holds no samples")
    if channel is not None:
        if not 0 <= channel < data.shape[1]:
            raise BadAudioError(path, f"it has {data.shape[1]} channel(s), so channel {channel} does not exist")
        audio = data[:, channel]
    else:
        audio = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    if not np.all(np.isfinite(audio)):
        raise BadAudioError(path, "it contains NaN or infinite samples")
    audio = np.ascontiguousarray(audio, dtype=np.float32)
    if sample_rate is not None and sample_rate != rate:
        audio = resample(audio, rate, sample_rate)
        rate = sample_rate
    return audio, int(rate)


def resample(audio: np.ndarray, src: int, dst: int) -> np.ndarray:
    """Mono float32 audio from rate `src` to rate `dst` (soxr, high quality)."""
    audio = np.asarray(audio, dtype=np.float32)
    if src == dst:
        return audio
    if src <= 0 or dst <= 0:
        raise ValueError(f"sample rates must be positive, got {src} -> {dst}")
    return soxr.resample(audio, src, dst, quality=RESAMPLE_QUALITY).astype(np.float32, copy=False)


def write_audio(path: str | os.PathLike, audio: np.ndarray, sample_rate: int) -> Path:
    """Write mono (or [frames, channels]) audio as 16-bit PCM wav, atomically.

    The file appears under its name only when complete (temporary file in the same folder, then
    os.replace), so a killed run never leaves a half-written wav that looks valid.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # libsndfile wraps around instead of clipping when a float exceeds the PCM range.
    samples = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            sf.write(handle, samples, int(sample_rate), subtype="PCM_16", format="WAV")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _info(path: str) -> sf._SoundFileInfo:
    if not os.path.isfile(path):
        raise BadAudioError(path, "the file does not exist")
    if os.path.getsize(path) == 0:
        raise BadAudioError(path, "the file is empty (0 bytes)")
    try:
        return sf.info(path)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise BadAudioError(path, f"soundfile cannot read it ({_short(exc)})") from exc


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    # libsndfile messages repeat the path; keep the part that says what went wrong.
    return (text.split(": ", 1)[-1] if ": " in text else text).rstrip(".")
