"""vpeval_torch.shape_buckets: row counts held to a few shapes (oneDNN builds a kernel per new shape), with each
real row's output that of the unpadded computation; through a wav2vec2 under CPU bf16 autocast, many waveform
lengths reach the linear products in a few row counts and the CNN's products in a few block shapes."""

from __future__ import annotations

import types

import pytest
import torch
import torch.nn.functional as F

import vpeval_torch.shape_buckets as buckets
from vpeval_torch.autocast_copies import weights_under_autocast
from vpeval_torch.shape_buckets import TIME_BLOCK, TIME_STEP, bucket_rows, bucketed_linear, by_time_blocks
from vpeval_torch.ssl_masked import time_major_under_autocast


def test_bucket_rows_pads_little_into_few_shapes():
    padded = [bucket_rows(n) for n in range(1, 20001)]
    assert all(n <= p <= max(n + 31, n * 9 // 8) for n, p in zip(range(1, 20001), padded))
    assert padded == sorted(padded)  # a longer input never gets a smaller shape
    assert len(set(padded[:512])) == 16  # 512 row counts, 16 shapes
    assert len(set(padded)) < 100


def recorded_linear(monkeypatch) -> list[int]:
    """The row counts shape_buckets hands to F.linear."""
    rows = []

    def linear(input, weight, bias=None):
        rows.append(input.numel() // input.shape[-1])
        return F.linear(input, weight, bias)

    monkeypatch.setattr(buckets, "F", types.SimpleNamespace(linear=linear))
    return rows


@pytest.mark.parametrize("shape", [(1, 37, 24), (37, 24), (3, 5, 24), (0, 24)])
def test_bucketed_linear_gives_each_row_its_own_output(shape, monkeypatch):
    generator = torch.Generator().manual_seed(0)
    x, weight, bias = torch.randn(shape, generator=generator), torch.randn(16, 24), torch.randn(16)
    rows = recorded_linear(monkeypatch)
    got = bucketed_linear(x, weight, bias)
    assert got.shape == (*shape[:-1], 16)
    torch.testing.assert_close(got, F.linear(x, weight, bias), rtol=1e-6, atol=1e-6)
    assert rows == [bucket_rows(x.numel() // 24) if x.numel() else 0]


def test_by_time_blocks_gives_each_row_its_own_output_in_few_shapes():
    weight = torch.randn(3 * 4, 8, generator=torch.Generator().manual_seed(1))
    shapes = []

    def row_wise(rows):
        shapes.append(tuple(rows.shape))
        return torch.tanh(rows @ weight)

    for count in (1, 127, 128, 129, TIME_BLOCK - 1, TIME_BLOCK, TIME_BLOCK + 1, 3 * TIME_BLOCK + 517):
        windows = torch.randn(count, 3, 4, generator=torch.Generator().manual_seed(count))
        got = by_time_blocks(windows, row_wise)
        torch.testing.assert_close(got, torch.tanh(windows.reshape(count, -1) @ weight), rtol=1e-6, atol=1e-6)
    assert {s[1] for s in shapes} == {12}
    assert all(s[0] == TIME_BLOCK or s[0] % TIME_STEP == 0 for s in shapes)
    assert len(set(shapes)) == 4  # 128, 256, 640 and 2048 rows (a full block, or 2047 padded)


transformers = pytest.importorskip("transformers")


def test_wav2vec2_lengths_reach_oneDNN_in_few_shapes(tiny_wav2vec2, monkeypatch):
    """Twenty waveform lengths through a bf16 wav2vec2: the linear products see a handful of row counts, the
    CNN's products blocks of a few shapes, and the outputs stay those of unpadded rows to bf16's rounding."""
    net = tiny_wav2vec2("group")
    time_major_under_autocast(net)
    weights_under_autocast(net)
    lengths = [4000 + 331 * k for k in range(20)]  # 12 to 32 frames
    waves = [torch.randn(1, n, generator=torch.Generator().manual_seed(n)) for n in lengths]
    blocks = []
    real = buckets.by_time_blocks
    monkeypatch.setattr(
        "vpeval_torch.ssl_masked.by_time_blocks",
        lambda rows, row_wise: real(rows, lambda block: blocks.append(len(block)) or row_wise(block)),
    )
    rows = recorded_linear(monkeypatch)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        bucketed = [net(w).last_hidden_state for w in waves]
        counts = set(rows)
        monkeypatch.setattr(buckets, "bucket_rows", lambda n: n)
        rows.clear()
        unpadded = [net(w).last_hidden_state for w in waves]
    frames = {h.shape[1] for h in unpadded}
    assert len(frames) == 20 and set(rows) >= frames  # without buckets: every length its own row count
    assert len(counts - {1}) <= 3  # with them: a few (1: the pooled rows some heads pass, not wav2vec2's)
    assert blocks and all(n % TIME_STEP == 0 for n in blocks)  # 7 layers x 20 lengths: multiples of 128 rows
    for got, expected in zip(bucketed, unpadded):
        torch.testing.assert_close(got.float(), expected.float(), rtol=0.05, atol=0.05)
