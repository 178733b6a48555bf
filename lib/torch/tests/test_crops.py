"""crops: random crops read only their frames from disk, fixed by (seed, epoch, index), in any loader."""

from __future__ import annotations

import tracemalloc
from dataclasses import dataclass

import numpy as np
import pytest
import soundfile as sf
import torch

from vpeval_torch import crops
from vpeval_torch.crops import CropItem, RandomCrops, crop_items, crop_loader


@dataclass
class Utt:  # the fields of vpeval.types.Utterance that crops read
    path: str
    duration: float | None = None
    sample_rate: int | None = None
    channel: int | None = None


def _write(path, seconds, rate=16000, seed=0, channels=1):
    rng = np.random.default_rng(seed)
    samples = (0.1 * rng.standard_normal((int(seconds * rate), channels))).astype(np.float32)
    sf.write(str(path), samples if channels > 1 else samples[:, 0], rate, subtype="FLOAT")
    return samples


@pytest.fixture
def long_file(tmp_path):
    path = tmp_path / "long.wav"
    return path, _write(path, 60.0)  # far longer than a crop


def test_a_crop_reads_only_its_frames(long_file, monkeypatch):
    path, samples = long_file
    calls = []
    real_read = sf.read

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real_read(*args, **kwargs)

    monkeypatch.setattr(crops.sf, "read", spy)
    item = crop_items([Utt(str(path))], [3])[0]
    assert item == CropItem(str(path), 3, 60 * 16000, 16000, None)
    wave, label = RandomCrops([item], 0.5, 16000, seed=1, epoch=1)[0]
    assert label == 3 and wave.shape == (8000,) and wave.dtype == torch.float32
    assert len(calls) == 1 and calls[0]["frames"] == 8000
    start = calls[0]["start"]
    assert np.array_equal(wave.numpy(), samples[start : start + 8000, 0])


def test_same_seed_and_epoch_give_the_same_crops_another_epoch_or_seed_others(long_file):
    path, _ = long_file
    items = crop_items([Utt(str(path))] * 4, [0, 1, 2, 3])
    first = torch.stack([w for w, _ in RandomCrops(items, 0.25, 16000, seed=7, epoch=1)])
    again = torch.stack([w for w, _ in RandomCrops(items, 0.25, 16000, seed=7, epoch=1)])
    other_epoch = torch.stack([w for w, _ in RandomCrops(items, 0.25, 16000, seed=7, epoch=2)])
    other_seed = torch.stack([w for w, _ in RandomCrops(items, 0.25, 16000, seed=8, epoch=1)])
    assert torch.equal(first, again)
    assert not torch.equal(first, other_epoch) and not torch.equal(first, other_seed)
    assert len({tuple(w[:4].tolist()) for w in first}) == 4  # index i of the same file: its own crop


def test_short_files_are_repeated_and_other_rates_resampled(tmp_path):
    short = tmp_path / "short.wav"
    samples = _write(short, 0.1, seed=2)[:, 0]
    wave, _ = RandomCrops(crop_items([Utt(str(short))], [0]), 0.25, 16000, seed=0, epoch=0)[0]
    assert wave.shape == (4000,) and np.array_equal(wave.numpy(), np.tile(samples, 3)[:4000])
    rate8k = tmp_path / "8k.wav"
    _write(rate8k, 5.0, rate=8000)
    item = crop_items([Utt(str(rate8k))], [0])[0]
    assert (item.frames, item.sample_rate) == (40000, 8000)
    wave, _ = RandomCrops([item], 0.25, 16000, seed=0, epoch=0)[0]
    assert wave.shape == (4000,) and float(wave.abs().max()) > 0


def test_a_channel_is_picked_or_channels_mixed(tmp_path):
    path = tmp_path / "stereo.wav"
    samples = _write(path, 0.2, channels=2)
    (left,) = crop_items([Utt(str(path), channel=1)], [0])
    mixed = crop_items([Utt(str(path))], [0])[0]
    a, _ = RandomCrops([left], 0.2, 16000, 0, 0)[0]
    b, _ = RandomCrops([mixed], 0.2, 16000, 0, 0)[0]
    assert np.array_equal(a.numpy(), samples[:, 1])
    assert np.allclose(b.numpy(), samples.mean(axis=1), atol=1e-7)


def test_crop_items_use_declared_lengths_else_only_the_header(tmp_path, monkeypatch):
    path = tmp_path / "a.wav"
    _write(path, 1.0)

    def no_samples(*args, **kwargs):
        raise AssertionError("crop_items must not read samples")

    monkeypatch.setattr(crops.sf, "read", no_samples)
    monkeypatch.setattr(sf, "read", no_samples)
    declared = crop_items([Utt(str(path), duration=2.5, sample_rate=8000)], [1])[0]
    assert (declared.frames, declared.sample_rate) == (20000, 8000)  # metadata wins: the file is not opened
    header = crop_items([Utt(str(path))], [1])[0]
    assert (header.frames, header.sample_rate) == (16000, 16000)


def test_crop_items_of_n_and_4n_files_hold_no_audio(tmp_path, monkeypatch):
    paths = []
    for k in range(40):
        p = tmp_path / f"{k}.wav"
        _write(p, 2.0, seed=k)  # 128 kB of samples each
        paths.append(str(p))

    def no_samples(*args, **kwargs):
        raise AssertionError("crop_items read samples")

    monkeypatch.setattr(sf, "read", no_samples)
    monkeypatch.setattr(sf.SoundFile, "read", no_samples)

    def held(count):
        """Bytes still allocated from inside crops.py while its items are alive. Filtered by traceback: the
        process-wide peak also counted other threads (a worker pool left by an earlier test in the same
        xdist worker once put 279 kB into it)."""
        tracemalloc.start(25)
        items = crop_items([Utt(p) for p in paths[:count]], list(range(count)))
        inside_crops = tracemalloc.Filter(True, crops.__file__, all_frames=True)
        snapshot = tracemalloc.take_snapshot().filter_traces([inside_crops])
        tracemalloc.stop()
        assert len(items) == count
        return sum(stat.size for stat in snapshot.statistics("filename"))

    small, big = held(10), held(40)
    # the items themselves (paths, lengths) take well under 1 kB per file; holding audio: 128 kB per file
    assert big < 100_000  # below one file's samples
    assert (big - small) / 30 < 3_200  # per added file: 40 times less than its samples


def test_unreadable_files_are_one_sentence(tmp_path):
    bad = tmp_path / "bad.wav"
    bad.write_bytes(b"not audio")
    from vpeval.errors import BadAudioError

    with pytest.raises(BadAudioError, match="bad.wav"):
        crop_items([Utt(str(bad))], [0])
    with pytest.raises(BadAudioError, match="bad.wav"):
        RandomCrops([CropItem(str(bad), 0, 100000, 16000)], 0.1, 16000, 0, 0)[0]


def test_loader_batches_are_the_same_with_zero_and_two_workers(tmp_path):
    items = []
    for k in range(6):
        p = tmp_path / f"{k}.wav"
        _write(p, 1.0 + k * 0.3, seed=k)
        items.append(Utt(str(p)))
    dataset = RandomCrops(crop_items(items, list(range(6))), 0.2, 16000, seed=3, epoch=1)

    def batches(workers):
        return [(w.clone(), y.clone()) for w, y in crop_loader(dataset, 4, workers, "cpu", shuffle_seed=5)]

    here, forked = batches(0), batches(2)
    assert len(here) == 1 and here[0][0].shape == (4, 3200)  # drop_last: 6 crops, one full batch
    assert [y.tolist() for _, y in here] == [y.tolist() for _, y in forked]
    assert all(torch.equal(a, b) for (a, _), (b, _) in zip(here, forked))
    assert [y.tolist() for _, y in batches(0)] == [y.tolist() for _, y in here]  # order fixed by shuffle_seed
    orders = [[y.tolist() for _, y in crop_loader(dataset, 6, 0, "cpu", shuffle_seed=s)] for s in (5, 6)]
    assert orders[0] != orders[1]  # another shuffle seed, another order
    assert len(list(crop_loader(dataset, 4, 0, "cpu", 5, drop_last=False))) == 2
