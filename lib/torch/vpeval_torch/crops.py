"""Streaming random crops for training: each step reads only its crops' samples from disk.

A corpus is described by `CropItem`s (path, label, length from metadata or the file header), never by
its samples, so memory stays bounded by the batches in flight whatever the corpus size. `RandomCrops`
reads a crop with soundfile's start/frames, resamples it with soxr and pads short files by repetition;
`crop_loader` wraps it in a torch DataLoader (worker processes, prefetch, pinned memory on CUDA).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import soundfile as sf
import soxr
import torch

RESAMPLE_QUALITY = "HQ"  # vpeval.audio's setting


@dataclass(frozen=True)
class CropItem:
    """One training file: `frames` and `sample_rate` are the file's own (not the training rate)."""

    path: str
    label: int
    frames: int
    sample_rate: int
    channel: int | None = None


def crop_items(utterances: Sequence[Any], labels: Sequence[int]) -> list[CropItem]:
    """CropItems of utterances (vpeval Utterance-like: path, channel, duration, sample_rate).

    The length comes from the utterance's declared duration and sample rate, else from the file header
    (soundfile.info): no sample is read here.
    """
    if len(utterances) != len(labels):
        raise ValueError(f"crop_items got {len(utterances)} utterances but {len(labels)} labels")
    items = []
    for u, label in zip(utterances, labels):
        duration, rate = getattr(u, "duration", None), getattr(u, "sample_rate", None)
        if duration and rate:
            frames = int(round(duration * rate))
        else:
            info = _info(u.path)
            frames, rate = int(info.frames), int(info.samplerate)
        items.append(CropItem(str(u.path), int(label), frames, int(rate), getattr(u, "channel", None)))
    return items


class RandomCrops(torch.utils.data.Dataset):
    """Item i: a random `crop_seconds` stretch of items[i] at `sample_rate`, and its label.

    The crop position depends only on (seed, epoch, i), so any worker, any order and any number of
    workers give the same crops. Files shorter than a crop are repeated to fill it.
    """

    def __init__(self, items: Sequence[CropItem], crop_seconds: float, sample_rate: int, seed: int, epoch: int):
        if crop_seconds <= 0 or sample_rate <= 0:
            raise ValueError(f"crop_seconds and sample_rate must be positive, got {crop_seconds}, {sample_rate}")
        self.items = list(items)
        self.crop_seconds = float(crop_seconds)
        self.sample_rate = int(sample_rate)
        self.crop = int(self.crop_seconds * self.sample_rate)
        self.seed = int(seed)
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        item = self.items[i]
        # the file's own frames that resample to one crop (one more for soxr's rounding)
        same_rate = item.sample_rate == self.sample_rate
        needed = self.crop if same_rate else math.ceil(self.crop_seconds * item.sample_rate) + 1
        if item.frames > needed:
            rng = np.random.default_rng([self.seed, self.epoch, int(i)])
            start = int(rng.integers(0, item.frames - needed + 1))
            audio = _read(item, start, needed)
        else:
            audio = _read(item, 0, -1)
        if item.sample_rate != self.sample_rate and audio.size:
            audio = soxr.resample(audio, item.sample_rate, self.sample_rate, quality=RESAMPLE_QUALITY)
        return torch.from_numpy(_fit(np.asarray(audio, dtype=np.float32), self.crop)), item.label


def crop_loader(
    dataset: RandomCrops, batch_size: int, workers: int, device: str, shuffle_seed: int, drop_last: bool = True
) -> torch.utils.data.DataLoader:
    """Shuffled batches (waves [B, crop], labels [B]) of `dataset`, read by `workers` processes.

    The order comes from `shuffle_seed` alone and each crop from its index, so workers=0 (in this
    process) and any number of workers give the same batches. Memory on CUDA is pinned for fast copies;
    once this process has started CUDA, workers are spawned (a forked child would crash in CUDA).
    """
    if batch_size < 1 or workers < 0:
        raise ValueError(f"crop_loader needs batch_size >= 1 and workers >= 0, got {batch_size}, {workers}")
    generator = torch.Generator().manual_seed(int(shuffle_seed))
    extra: dict[str, Any] = {}
    if workers > 0:
        extra["prefetch_factor"] = 2
        if _cuda_started():
            extra["multiprocessing_context"] = "spawn"
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        generator=generator,
        num_workers=workers,
        pin_memory=str(device).startswith("cuda"),
        drop_last=drop_last,
        **extra,
    )


def _cuda_started() -> bool:
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:
        return False


def _info(path: str):
    try:
        return sf.info(path)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise _bad_audio(path, f"soundfile cannot read its header ({exc})") from exc


def _read(item: CropItem, start: int, frames: int) -> np.ndarray:
    """Mono float32 samples [start, start + frames) of a file (frames -1: to the end)."""
    try:
        data, _ = sf.read(item.path, start=start, frames=frames, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, ValueError) as exc:
        raise _bad_audio(item.path, f"soundfile cannot read it ({exc})") from exc
    if item.channel is not None:
        if not 0 <= item.channel < data.shape[1]:
            raise _bad_audio(item.path, f"it has {data.shape[1]} channel(s), so channel {item.channel} does not exist")
        return np.ascontiguousarray(data[:, item.channel])
    return data.mean(axis=1) if data.shape[1] > 1 else np.ascontiguousarray(data[:, 0])


def _fit(audio: np.ndarray, length: int) -> np.ndarray:
    """Exactly `length` samples: cut, or repeated to fill (silence for an empty file)."""
    if audio.size == 0:
        return np.zeros(length, dtype=np.float32)
    if audio.size < length:
        audio = np.tile(audio, -(-length // audio.size))
    return np.ascontiguousarray(audio[:length])


def _bad_audio(path: str, reason: str) -> Exception:
    try:
        from vpeval.errors import BadAudioError
    except ImportError:  # the library used without vpeval's core
        return ValueError(f"Audio file {path} cannot be used: {reason}.")
    return BadAudioError(path, reason)


def log_short_utterances(log: Any, name: str, short: int, total: int, crop_seconds: float) -> None:
    """Say how many training utterances drop_short left out: counted where the user reads results (report.md
    lists the run's warnings). Nothing when none was."""
    if short:
        log.warning(
            "%s: %d of %d training utterances are shorter than one crop (%.1f s) and are not trained on (drop_short, "
            "as VoicePrivacy's data preparation)",
            name,
            short,
            total,
            crop_seconds,
        )
