"""batching: length buckets cover every index once, deterministically; padding and masks line up."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval_torch.batching import length_buckets, length_mask, packed_buckets, pad_batch


def test_length_buckets_cover_every_index_once_in_length_order_and_deterministically():
    lengths = list(np.random.default_rng(0).integers(1, 500, size=103))
    batches = length_buckets(lengths, 8)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(103))
    assert all(1 <= len(b) <= 8 for b in batches) and sum(len(b) == 8 for b in batches) == 12
    assert [lengths[i] for i in flat] == sorted(lengths)  # similar lengths share a batch
    assert length_buckets(lengths, 8) == batches


def test_equal_lengths_keep_index_order():
    assert length_buckets([5, 5, 5, 5, 5], 2) == [[0, 1], [2, 3], [4]]


def test_max_frames_bounds_the_padded_size_but_keeps_one_index_per_batch():
    lengths = [10, 10, 10, 100, 100, 1000]
    batches = length_buckets(lengths, 64, max_frames=200)
    assert batches == [[0, 1, 2], [3, 4], [5]]
    assert all(len(b) * max(lengths[i] for i in b) <= 200 or len(b) == 1 for b in batches)


def test_packed_buckets_bound_the_sum_of_lengths_in_the_fewest_near_equal_batches():
    lengths = list(np.random.default_rng(1).integers(200, 600, size=32))
    batches = packed_buckets(lengths, 64, max_frames=6500)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(32)) and [lengths[i] for i in flat] == sorted(lengths)
    sums = [sum(lengths[i] for i in b) for b in batches]
    assert len(batches) == -(-sum(lengths) // 6500) and max(sums) <= 6500
    assert max(sums) - min(sums) <= max(lengths)  # cut near the equal share, not greedily full
    # the padded rule bounds batch-size x longest instead, and needs more batches for the same frames
    assert len(length_buckets(lengths, 64, max_frames=6500)) > len(batches)
    assert packed_buckets(lengths, 64, max_frames=6500) == batches


def test_packed_buckets_keep_the_batch_size_and_give_an_overlong_index_its_own_batch():
    assert packed_buckets([5, 5, 5, 5, 5], 2) == [[0, 1], [2, 3], [4]]
    batches = packed_buckets([10, 10, 10, 100, 100, 1000], 64, max_frames=200)
    assert [5] in batches and all(sum([10, 10, 10, 100, 100, 1000][i] for i in b) <= 200 for b in batches if b != [5])
    assert packed_buckets([], 4) == []
    with pytest.raises(ValueError):
        packed_buckets([1, 2], 2, max_frames=0)


def test_bad_sizes_raise():
    with pytest.raises(ValueError):
        length_buckets([1, 2], 0)
    with pytest.raises(ValueError):
        length_buckets([1, 2], 2, max_frames=0)
    assert length_buckets([], 4) == []


def test_pad_batch_pads_with_zeros_and_returns_lengths():
    arrays = [np.ones((3, 2), np.float32), 2 * np.ones((5, 2), np.float32), np.ones((1, 2), np.float32)]
    padded, lengths = pad_batch(arrays)
    assert padded.shape == (3, 5, 2) and padded.dtype == torch.float32
    assert lengths.tolist() == [3, 5, 1] and lengths.dtype == torch.int64
    assert torch.equal(padded[0, :3], torch.ones(3, 2)) and torch.all(padded[0, 3:] == 0)
    assert torch.equal(padded[1], 2 * torch.ones(5, 2))
    one_d, _ = pad_batch([np.arange(4.0), np.arange(2.0)])
    assert one_d.shape == (2, 4) and one_d[1].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_pad_batch_refuses_mixed_trailing_shapes_and_nothing():
    with pytest.raises(ValueError):
        pad_batch([np.ones((3, 2)), np.ones((3, 4))])
    with pytest.raises(ValueError):
        pad_batch([])


def test_length_mask_marks_real_frames():
    mask = length_mask(torch.tensor([3, 1, 4]), 4)
    assert mask.dtype == torch.bool and mask.shape == (3, 4)
    assert mask.tolist() == [[True, True, True, False], [True, False, False, False], [True, True, True, True]]
    _, lengths = pad_batch([np.ones(2), np.ones(6)])
    assert length_mask(lengths, 6).sum(dim=1).tolist() == [2, 6]
