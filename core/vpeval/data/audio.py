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

# What the scan (vpeval.data.scan) refuses as unscorable; docs/data.md explains the choices.
MIN_SECONDS = 0.1  # shorter than one syllable: no speaker or speech information to score
SILENCE_DBFS = -80.0  # RMS below this is silence (16-bit dither alone is about -101 dBFS)
FULL_SCALE = 1.0  # float samples beyond it would be clipped by every 16-bit copy
_BLOCK = 1 << 16


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


def measure_audio(path: str | os.PathLike, channel: int | None = None) -> dict:
    """Header and whole-content measures of a file, read blockwise (constant memory).

    Keys: frames, sample_rate, channels, float (a floating-point encoding), nonfinite (NaN or infinite
    samples), peak and rms (of the finite samples of the mono mix, or of `channel`). Unreadable files
    raise BadAudioError; `audio_problem` judges the measures.
    """
    path = str(path)
    info = _info(path)
    if info.frames <= 0:
        raise BadAudioError(path, "it holds no samples")
    if info.samplerate <= 0 or info.channels <= 0:
        raise BadAudioError(path, f"its header is invalid ({info.samplerate} Hz, {info.channels} channels)")
    if channel is not None and not 0 <= channel < info.channels:
        raise BadAudioError(path, f"it has {info.channels} channel(s), so channel {channel} does not exist")
    frames = nonfinite = 0
    peak = energy = 0.0
    try:
        with sf.SoundFile(path) as f:
            for block in f.blocks(blocksize=_BLOCK, dtype="float32", always_2d=True):
                if channel is not None or block.shape[1] == 1:
                    mono = np.ascontiguousarray(block[:, channel or 0], dtype=np.float64)
                else:
                    mono = block.mean(axis=1, dtype=np.float64)
                finite = np.isfinite(mono)
                nonfinite += int(mono.size - np.count_nonzero(finite))
                if nonfinite:
                    mono = np.where(finite, mono, 0.0)
                frames += len(mono)
                if len(mono):
                    peak = max(peak, float(np.max(np.abs(mono))))
                    energy += float(np.square(mono).sum())  # not np.dot: BLAS threads cost more than they save here
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise BadAudioError(path, f"its data is corrupt or cut short ({_short(exc)})") from exc
    if frames < info.frames:
        raise BadAudioError(path, f"its data is cut short ({frames} of the {info.frames} samples its header promises)")
    return {
        "frames": int(info.frames),
        "sample_rate": int(info.samplerate),
        "channels": int(info.channels),
        "float": info.subtype in ("FLOAT", "DOUBLE"),
        "nonfinite": nonfinite,
        "peak": peak,
        "rms": float(np.sqrt(energy / frames)),
    }


def audio_problem(measures: dict) -> str | None:
    """Why a measured file cannot be scored as speech (one clause), or None when it can."""
    if measures["nonfinite"]:
        return f"it contains {measures['nonfinite']} NaN or infinite samples"
    seconds = measures["frames"] / measures["sample_rate"]
    if seconds < MIN_SECONDS:
        return f"it lasts {seconds:.3g} s, shorter than the {MIN_SECONDS:g} s minimum for a scorable utterance"
    if measures["peak"] == 0.0:
        return "every sample is zero (digital silence)"
    level = 20 * np.log10(measures["rms"]) if measures["rms"] > 0 else -np.inf
    if level < SILENCE_DBFS:
        return f"it is silent (RMS level {level:.0f} dBFS, below the {SILENCE_DBFS:g} dBFS floor)"
    if measures["peak"] > FULL_SCALE:
        return (
            f"its floating-point samples peak at {measures['peak']:.3g}, beyond full scale ({FULL_SCALE:g}), so "
            "every 16-bit copy would clip it; scale the file into [-1, 1]"
        )
    return None


def read_audio(
    path: str | os.PathLike, sample_rate: int | None = None, channel: int | None = None
) -> tuple[np.ndarray, int]:
    """Mono float32 samples and their rate, resampled to `sample_rate` when given.

    Channels are averaged unless `channel` picks one (0-based).
    """
    path = str(path)
    _require_file(path)
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
    _require_file(path)
    if os.path.getsize(path) == 0:
        raise BadAudioError(path, "the file is empty (0 bytes)")
    try:
        return sf.info(path)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise BadAudioError(path, f"soundfile cannot read it ({_short(exc)})") from exc


def _require_file(path: str) -> None:
    if os.path.isdir(path):
        raise BadAudioError(path, "it is a folder, not an audio file")
    if not os.path.isfile(path):
        raise BadAudioError(path, "the file does not exist")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    # libsndfile messages repeat the path; keep the part that says what went wrong.
    return (text.split(": ", 1)[-1] if ": " in text else text).rstrip(".")
