"""Audio files in and out: soundfile for reading and writing, soxr for resampling.

Every problem with a file a user gave us becomes a `BadAudioError` that names the file and says why.
torchaudio.load is avoided on purpose: it needs FFmpeg, soundfile does not.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from vpeval.errors import BadAudioError
from vpeval.safepath import PathProblem, stat_regular

RESAMPLE_QUALITY = "HQ"

_BLOCK = 1 << 16

# What a header must say to be speech (`_open_checked`); beyond these it is wrong or not an utterance.
MIN_RATE, MAX_RATE = 1_000, 384_000  # telephone speech is 8 kHz; 384 kHz is the highest studio rate
MAX_CHANNELS = 64  # mono and stereo recordings, microphone arrays
MAX_SECONDS = 3600.0  # one utterance: LibriSpeech and VCTK utterances last seconds, the longest under a minute
# A header may promise a little more data than stored (a missing pad byte); a cut-short file is refused.
SHORT_TOLERANCE = 0.01  # share of the promised data
SHORT_TOLERANCE_BYTES = 64


def check_audio(path: str | os.PathLike) -> tuple[int, int]:
    """(frames, sample rate) of a file after a cheap sanity check: header and the last frame only.

    Reading the last frame catches files whose data was cut short after a valid header.
    """
    path = str(path)
    try:
        with _open_checked(path) as f:
            f.seek(f.frames - 1)
            last = f.read(1, dtype="float32", always_2d=True)
    except _SOUNDFILE_ERRORS as exc:
        raise BadAudioError(path, f"its data is corrupt or cut short ({_short(exc)})") from exc
    if len(last) != 1:
        raise BadAudioError(path, "its data is cut short (fewer samples than the header says)")
    return f.frames, f.samplerate


def measure_audio(path: str | os.PathLike, channel: int | None = None) -> dict:
    """`measure_samples` of a file's mono mix (or `channel`), read blockwise (constant memory), with its channels
    and float (a floating-point encoding). Unreadable files raise BadAudioError; the audio gate
    (vpeval.audio_gate.audio_problem) judges the measures."""
    path, blocks = str(path), []
    try:
        with _open_checked(path) as f:
            if channel is not None and not 0 <= channel < f.channels:
                raise BadAudioError(path, f"it has {f.channels} channel(s), so channel {channel} does not exist")
            for block in f.blocks(blocksize=_BLOCK, dtype="float32", always_2d=True):
                mono = block[:, channel or 0] if channel is not None or block.shape[1] == 1 else block.mean(axis=1)
                blocks.append(measure_samples(mono, f.samplerate))
    except _SOUNDFILE_ERRORS as exc:
        raise BadAudioError(path, f"its data is corrupt or cut short ({_short(exc)})") from exc
    if (frames := sum(b["frames"] for b in blocks)) < f.frames:
        raise BadAudioError(path, f"its data is cut short ({frames} of the {f.frames} samples its header promises)")
    square, mean = (sum(b[k] ** p * b["frames"] for b in blocks) / frames for k, p in (("rms", 2), ("mean", 1)))
    return (
        dict(frames=frames, sample_rate=f.samplerate, channels=f.channels, float=f.subtype in ("FLOAT", "DOUBLE"))
        | {"nonfinite": sum(b["nonfinite"] for b in blocks), "peak": max(b["peak"] for b in blocks)}
        | {"rms": float(np.sqrt(square)), "mean": mean}
    )


def measure_samples(audio: np.ndarray, sample_rate: int) -> dict:
    """frames, sample_rate, nonfinite (NaN or infinite samples), and peak, rms and mean of the finite samples."""
    finite = np.isfinite(audio)
    mono = np.where(finite, audio, 0.0).astype(np.float64)
    peak, rms, mean = np.max(np.abs(mono), initial=0.0), np.sqrt(np.mean(np.square(mono))), np.mean(mono)
    measures = dict(frames=len(mono), sample_rate=sample_rate, nonfinite=int(mono.size - np.count_nonzero(finite)))
    return measures | {"peak": float(peak), "rms": float(rms), "mean": float(mean)}


def read_audio(
    path: str | os.PathLike, sample_rate: int | None = None, channel: int | None = None
) -> tuple[np.ndarray, int]:
    """Mono float32 samples and their rate, resampled to `sample_rate` when given.

    Channels are averaged unless `channel` picks one (0-based). Within a run (`decoded_audio`) a file already
    decoded is not decoded again.
    """
    path = str(path)
    audio, rate, held = _decoded.read(path, channel) if _decoded is not None else (*_decode(path, channel), False)
    if sample_rate is not None and sample_rate != rate:
        return resample(audio, rate, sample_rate), int(sample_rate)
    return (audio.copy() if held else audio), int(rate)  # callers may change their samples in place


def _decode(path: str, channel: int | None) -> tuple[np.ndarray, int]:
    """The file's mono (or `channel`) float32 samples at its own rate, checked."""
    try:
        with _open_checked(path) as f:  # exactly what sf.read does (its seek too: MP3 decodes differently without)
            if f.seekable():
                f.seek(0)
            data, rate = f.read(f.frames, dtype="float32", always_2d=True), f.samplerate
    except _SOUNDFILE_ERRORS as exc:
        raise BadAudioError(path, f"soundfile cannot read it ({_short(exc)})") from exc
    if data.shape[0] == 0:
        raise BadAudioError(path, "it holds no samples")
    if data.shape[0] < f.frames:  # a compressed file (FLAC) whose data ends before its header's count
        raise BadAudioError(
            path, f"its data is cut short ({data.shape[0]} of the {f.frames} samples its header promises)"
        )
    if channel is not None:
        if not 0 <= channel < data.shape[1]:
            raise BadAudioError(path, f"it has {data.shape[1]} channel(s), so channel {channel} does not exist")
        audio = data[:, channel]
    else:
        audio = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    if not np.all(np.isfinite(audio)):
        raise BadAudioError(path, "it contains NaN or infinite samples")
    return np.ascontiguousarray(audio, dtype=np.float32), int(rate)


class DecodedAudio:
    """A run's decoded files (issue 39): the stages that read one file (ASV embedding, ASR, SER) decode it once.
    Keyed by path, channel and stat stamp (a rewritten file is another key). Files are kept until `limit` bytes
    of samples are held, later ones decoded at each read (`refused`): passes over a corpus in one order reuse
    the first files, where least-recently-used would drop each just before the next pass reads it. The run's
    worker threads share it; forked workers each have their own."""

    def __init__(self, limit: int):
        self.limit, self.held, self.lock = limit, {}, threading.Lock()
        self.bytes = self.hits = self.decoded = self.refused = 0

    def read(self, path: str, channel: int | None) -> tuple[np.ndarray, int, bool]:
        """(samples, rate, whether they are the kept, read-only array)."""
        try:
            st = os.stat(path)
            key = (os.path.abspath(path), channel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        except OSError:
            key = None  # _decode names the problem
        with self.lock:
            if key in self.held:
                self.hits += 1
                return (*self.held[key], True)
        audio, rate = _decode(path, channel)
        with self.lock:
            self.decoded += 1
            if key is not None and key not in self.held:
                if self.bytes + audio.nbytes > self.limit:
                    self.refused += 1
                else:
                    self.held[key], self.bytes = (audio.copy(), rate), self.bytes + audio.nbytes
                    self.held[key][0].flags.writeable = False
        return audio, rate, False


_decoded: DecodedAudio | None = None
# A worker forked while another thread held the lock would wait on it forever: the child gets a new one.
os.register_at_fork(after_in_child=lambda: _decoded is not None and setattr(_decoded, "lock", threading.Lock()))


@contextmanager
def decoded_audio(limit_mb: float | None = None) -> Iterator[DecodedAudio]:
    """Keep the files decoded in this block (a run), up to `limit_mb` MiB of samples (VPEVAL_DECODED_AUDIO_MB,
    default 1024; 0 keeps none); a nested block shares the outer one."""
    global _decoded
    if _decoded is not None:
        yield _decoded
        return
    limit = float(os.environ.get("VPEVAL_DECODED_AUDIO_MB", 1024) if limit_mb is None else limit_mb)
    _decoded = DecodedAudio(int(limit * 2**20))
    try:
        yield _decoded
    finally:
        _decoded = None


def resample(audio: np.ndarray, src: int, dst: int) -> np.ndarray:
    """Mono float32 audio from rate `src` to rate `dst` (soxr, high quality)."""
    audio = np.asarray(audio, dtype=np.float32)
    if src == dst:
        return audio
    if src <= 0 or dst <= 0:
        raise ValueError(f"sample rates must be positive, got {src} -> {dst}")
    return soxr.resample(audio, src, dst, quality=RESAMPLE_QUALITY).astype(np.float32, copy=False)


def write_audio(path: str | os.PathLike, audio: np.ndarray, sample_rate: int, subtype: str = "PCM_16") -> Path:
    """Write mono (or [frames, channels]) audio as 16-bit PCM wav (clipped at +-1), or as `subtype` "FLOAT"
    (32-bit float wav, every float32 sample kept as it is), atomically.

    The file appears under its name only when complete (temporary file in the same folder, then
    os.replace), so a killed run never leaves a half-written wav that looks valid.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = np.asarray(audio, dtype=np.float32)
    if subtype != "FLOAT":  # libsndfile wraps around instead of clipping when a float exceeds the PCM range
        samples = np.clip(samples, -1.0, 1.0)
    # Encoded in memory, then written: an OSError from a file soundfile writes itself is lost in its cffi callback
    # (a printed traceback, then an unrelated error), so a full disk or a size limit would go unnamed.
    encoded = io.BytesIO()
    sf.write(encoded, samples, int(sample_rate), subtype=subtype, format="WAV")
    data = encoded.getbuffer()  # a float WAV's PEAK chunk holds the write time: zeroed, so equal samples, equal bytes
    if (peak := encoded.getvalue().find(b"PEAK", 0, 256)) >= 0:
        data[peak + 12 : peak + 16] = bytes(4)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # the boundary names the file being written
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    return path


_SOUNDFILE_ERRORS = (sf.LibsndfileError, RuntimeError, ValueError)
_OPEN_ERRORS = _SOUNDFILE_ERRORS + (TypeError,)  # soundfile's TypeError: a format it needs parameters for
# libsndfile's header log when a chunk claims more bytes than the file has: "data : 32000 (should be 3200)".
# It then reads what is there, so a cut-short WAV, AIFF, AU or W64 file would pass as a shorter one.
_CLAIM = re.compile(r"^\s*([\w ]+?)\s*:\s*(\d+)\s*\(should be (\d+)\)", re.MULTILINE)
_UNKNOWN_LENGTH = 0x7FFF0000  # streaming writers (sox, ffmpeg to a pipe) put a huge placeholder here
_UNKNOWN_FRAMES = 2**63 - 1  # libsndfile's frame count when the header gives none (a streamed FLAC)
# NIST SPHERE (TIMIT) headers are text; libsndfile clamps their sample_count silently.
_NIST_FIELD = re.compile(rb"^(sample_count|channel_count|sample_n_bytes) -i (\d+)", re.MULTILINE)


def require_audio_file(path: str | os.PathLike) -> int:
    """The size of `path` when it is a regular file (judged by os.stat, nothing opened), else BadAudioError."""
    try:
        return stat_regular(path).st_size
    except PathProblem as problem:
        raise BadAudioError(str(path), problem.reason) from None


def _open_checked(path: str) -> sf.SoundFile:
    """The file opened with soundfile once its header says it can be speech, else BadAudioError.

    One os.stat before opening (nothing that is not a regular file is opened: a FIFO or /dev/zero would
    hang) and one open. Refused: headerless .raw files, no samples, a length the header does not give, no
    or more than MAX_CHANNELS channels, a sample rate outside MIN_RATE..MAX_RATE (a 1 Hz header would
    resample to a huge array), more than MAX_SECONDS, and a header promising more data than the file
    holds. The caller closes the file.
    """
    size = require_audio_file(path)
    if size == 0:
        raise BadAudioError(path, "the file is empty (0 bytes)")
    if os.path.splitext(path)[1].lower() == ".raw":  # soundfile needs rate, channels and encoding for these
        raise BadAudioError(
            path,
            "it is headerless raw audio (.raw), whose rate, channels and encoding no header gives; convert it to "
            "WAV or FLAC (for example sox -t raw -r 16000 -e signed -b 16 -c 1 in.raw out.wav)",
        )
    try:
        info = sf.SoundFile(path)
    except _OPEN_ERRORS as exc:
        raise BadAudioError(path, f"soundfile cannot read it ({_short(exc)})") from exc
    try:
        _check_header(path, info, size)
    except BaseException:
        info.close()
        raise
    return info


def _check_header(path: str, info: sf.SoundFile, size: int) -> None:
    if info.frames <= 0:
        raise BadAudioError(path, "it holds no samples")
    if info.frames == _UNKNOWN_FRAMES:
        raise BadAudioError(
            path,
            "its header does not give its length (written as a stream); re-encode it to WAV or FLAC with a "
            "tool that writes the length (for example sox in.flac out.flac)",
        )
    if not 0 < info.channels <= MAX_CHANNELS:
        raise BadAudioError(
            path,
            f"its header gives {info.channels} channels, where audio has 1 to {MAX_CHANNELS}; the header is damaged",
        )
    if not MIN_RATE <= info.samplerate <= MAX_RATE:
        raise BadAudioError(
            path,
            f"its header gives a sample rate of {info.samplerate} Hz, outside the {MIN_RATE} to {MAX_RATE} Hz of "
            "recorded audio; the header is damaged, or re-encode the file with its true rate",
        )
    seconds = info.frames / info.samplerate
    if seconds > MAX_SECONDS:
        raise BadAudioError(
            path,
            f"it lasts {seconds:.0f} s, more than the {MAX_SECONDS:.0f} s an utterance may last; split the "
            "recording into utterances",
        )
    claimed, held = _nist_shortfall(path, info, size) if info.format == "NIST" else _largest_shortfall(info.extra_info)
    if claimed - held > max(SHORT_TOLERANCE_BYTES, SHORT_TOLERANCE * claimed):
        raise BadAudioError(
            path,
            f"it is cut short: its header promises {claimed} bytes of audio data, the file holds {held} "
            f"({seconds:.3g} s of about {seconds * claimed / max(held, 1):.3g} s); copy or export it again",
        )


def _nist_shortfall(path: str, info: sf.SoundFile, size: int) -> tuple[int, int]:
    """(claimed, held) data bytes of a NIST SPHERE file, from its text header."""
    with open(path, "rb") as handle:
        head = handle.read(1024)
    fields = {name.decode(): int(value) for name, value in _NIST_FIELD.findall(head)}
    lines = head.split(b"\n", 2)
    header_bytes = int(lines[1]) if len(lines) > 2 and lines[1].strip().isdigit() else 1024
    claimed = (
        fields.get("sample_count", 0) * fields.get("channel_count", info.channels) * fields.get("sample_n_bytes", 0)
    )
    return claimed, max(0, size - header_bytes)


def _largest_shortfall(log: str) -> tuple[int, int]:
    """(claimed, held) bytes of the header chunk short of the most data, or (0, 0) when none is short."""
    worst = (0, 0)
    for _, claimed, held in _CLAIM.findall(log or ""):
        claimed, held = int(claimed), int(held)
        if claimed < _UNKNOWN_LENGTH and claimed - held >= worst[0] - worst[1]:  # ties: the data chunk, listed last
            worst = (claimed, held)
    return worst


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    # libsndfile messages repeat the path; keep the part that says what went wrong.
    return (text.split(": ", 1)[-1] if ": " in text else text).rstrip(".")
