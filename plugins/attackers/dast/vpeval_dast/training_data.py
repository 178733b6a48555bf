"""A stage's training data streamed from disk: random crops read at each step by DataLoader workers.

Nothing is loaded to plan an epoch: each utterance's length comes from its declared duration or its file
header (vpeval_torch.crops.crop_items), and the utterance gets one crop per crop-length stretch, so an
epoch covers about all of the audio once. Each crop is read from disk when its batch is made (only the
crop's samples), with its position fixed by (seed, epoch, index). The SSL stream is computed per batch
on the device (ssl_context: crop), or its frames are read memory-mapped from the disk store of
whole-utterance states (ssl_context: utterance), cropped with the audio.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from vpeval.api import PluginContext
from vpeval.types import Utterance
from vpeval_dast.embedding import SAMPLE_RATE, Embedder, random_crop_with_frames
from vpeval_dast.params import DastParams
from vpeval_torch.crops import CropItem, RandomCrops, crop_items, crop_loader

GPU_LOADER_WORKERS = 4  # loader_workers: null on a GPU


class StageCrops:
    """The crops of one stage's utterances (labels: their speakers, in sorted order)."""

    def __init__(
        self,
        utterances: Sequence[Utterance],
        embedder: Embedder,
        params: DastParams,
        context: PluginContext,
        description: str,
    ):
        names = sorted({u.speaker for u in utterances})
        label_of = {s: i for i, s in enumerate(names)}
        self.speakers = len(names)
        items = crop_items(utterances, [label_of[u.speaker] for u in utterances])
        crop = int(params.crop_seconds * SAMPLE_RATE)
        per_item = [max(1, round(i.frames * SAMPLE_RATE / i.sample_rate) // crop) for i in items]
        self.items = [item for item, count in zip(items, per_item) for _ in range(count)]
        self.crop_seconds = params.crop_seconds
        self.seed = context.torch_seed(description, "crops")
        self.device = str(embedder.device)
        # A daemonic process (a forked vpeval worker) cannot start DataLoader workers.
        workers = params.loader_workers
        if workers is None:
            workers = GPU_LOADER_WORKERS if embedder.device.type == "cuda" else 0
        self.workers = 0 if multiprocessing.current_process().daemon else workers
        self.states: list[str] | None = None
        self.hop = 0
        if embedder.ssl_store is not None:  # whole-utterance states, stored once; memory-mapped afterwards
            store = embedder.ssl_store
            paths = []
            for u in context.progress(utterances, total=len(utterances), description=f"{description}: SSL states"):
                paths.append(str(store.ensure(u)))  # reads the audio only where the states are missing
            self.states = [path for path, count in zip(paths, per_item) for _ in range(count)]
            self.hop = embedder.ssl.hop

    def batches_per_epoch(self, batch_size: int) -> int:
        count = -(-len(self.items) // batch_size)
        if count > 1 and len(self.items) % batch_size == 1:
            count -= 1  # the one-crop remainder is dropped (batch norm needs two)
        return count

    def dataset(self, epoch: int) -> torch.utils.data.Dataset:
        if self.states is None:
            return _Labelled(RandomCrops(self.items, self.crop_seconds, SAMPLE_RATE, self.seed, epoch))
        return CropsWithStates(self.items, self.states, self.crop_seconds, self.hop, self.seed, epoch)

    def batches(self, epoch: int, batch_size: int, shuffle_seed: int) -> Iterator[tuple]:
        """(waves [B, crop], SSL frames [L, B, T, D] float16 or None, labels [B]) in the epoch's order."""
        loader = crop_loader(
            self.dataset(epoch), batch_size, self.workers, self.device, shuffle_seed=shuffle_seed, drop_last=False
        )
        for index, (waves, hidden, labels) in enumerate(loader):
            if index >= self.batches_per_epoch(batch_size):
                break
            yield waves, (hidden.transpose(0, 1) if hidden.ndim == 4 else None), labels


class _Labelled(torch.utils.data.Dataset):
    """RandomCrops' (wave, label) as (wave, no SSL frames, label)."""

    def __init__(self, crops: RandomCrops):
        self.crops = crops

    def __len__(self) -> int:
        return len(self.crops)

    def __getitem__(self, i: int):
        wave, label = self.crops[i]
        return wave, torch.zeros(0), label


@dataclass
class CropsWithStates(torch.utils.data.Dataset):
    """Item i: a crop of items[i] and the stored SSL frames of the same stretch (the crop starts on a frame
    boundary). 16 kHz files read only the crop's samples; files at other rates are read whole and
    resampled (then cropped), as the states were computed on the 16 kHz audio."""

    items: list[CropItem]
    states: list[str]
    crop_seconds: float
    hop: int
    seed: int
    epoch: int

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int):
        from vpeval_torch.crops import _fit, _read

        item = self.items[i]
        hidden = np.load(self.states[i], mmap_mode="r")  # [L, T, D] float16, read where sliced
        crop = int(self.crop_seconds * SAMPLE_RATE)
        rng = np.random.default_rng([self.seed, self.epoch, int(i)])
        if item.sample_rate == SAMPLE_RATE and item.frames >= crop:
            first = int(rng.integers(0, item.frames - crop + 1)) // self.hop
            count = max(1, crop // self.hop)
            wave = _fit(_read(item, first * self.hop, crop), crop)
            frames = np.asarray(hidden[:, first : first + count])
            if frames.shape[1] < count:  # the utterance's frames end before the crop's last hop
                frames = np.concatenate([frames, np.repeat(hidden[:, -1:], count - frames.shape[1], axis=1)], axis=1)
        else:
            import soxr

            audio = _read(item, 0, -1)
            if item.sample_rate != SAMPLE_RATE and audio.size:
                audio = soxr.resample(audio, item.sample_rate, SAMPLE_RATE, quality="HQ").astype(np.float32)
            wave, frames = random_crop_with_frames(audio, np.asarray(hidden), crop, self.hop, rng)
        # copies: the frames are a slice of a read-only memory map, which torch must not wrap (it warns, and
        # a batch collated from it would alias the file's pages)
        return torch.from_numpy(np.array(wave, order="C")), torch.from_numpy(np.array(frames, order="C")), item.label
