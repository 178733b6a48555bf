"""Row counts held to a few shapes for oneDNN's bf16 products on the CPU.

oneDNN builds (JIT-compiles) a kernel for every new matrix shape it meets: 1-13 ms per product shape on this
project's AMX Xeon, about 44 ms for each new waveform length through wav2vec2-base (24 in the CNN, 18 in the
transformer), against about 300 ms for the forward itself; a speech corpus gives nearly every waveform its own
length, so without buckets that cost is paid per file. Each output row of these products depends on its own
input row alone, so padding rows with zeros and dropping their outputs changes no real row's inputs; the
kernel's blocking over a different row count may still round a sum differently (bf16 outputs differ from the
unbucketed product in the last bit on some rows), so these are used under CPU autocast only, where the numbers
are bf16's anyway, and a given waveform always gets the same buckets.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

TIME_BLOCK, TIME_STEP = 2048, 128  # rows of a full block; the last block padded to a multiple of TIME_STEP


def bucket_rows(rows: int) -> int:
    """`rows` rounded up to a multiple of an eighth of its power of two, at least 32: at most 1/8 more rows, and
    every count up to 512 in one of 16 shapes."""
    step = max(32, 1 << max(rows.bit_length() - 4, 0))
    return -(-rows // step) * step


def bucketed_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear with the rows (every dimension but the last, flattened) zero-padded up to bucket_rows."""
    rows = input.numel() // input.shape[-1] if input.shape[-1] else 0
    padded = bucket_rows(rows) if rows else rows
    if padded == rows:
        return F.linear(input, weight, bias)
    flat = input.reshape(rows, input.shape[-1])
    flat = torch.cat([flat, flat.new_zeros(padded - rows, flat.shape[1])])
    return F.linear(flat, weight, bias)[:rows].reshape(*input.shape[:-1], weight.shape[0])


def by_time_blocks(rows: torch.Tensor, row_wise: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """`row_wise` ([n, features] -> [n, C], each output row from its input row alone) over `rows` [T, ...]
    flattened per row, in blocks of TIME_BLOCK rows, the last one zero-padded up to a multiple of TIME_STEP:
    a few shapes whatever T is, and a block's activations stay in cache from one operation to the next."""
    count, results = rows.shape[0], []
    for start in range(0, count, TIME_BLOCK):
        n = min(TIME_BLOCK, count - start)
        if n == TIME_BLOCK:
            results.append(row_wise(rows[start : start + n].reshape(n, -1)))
            continue
        block = rows.new_empty((-(-n // TIME_STEP) * TIME_STEP, *rows.shape[1:]))
        block[:n] = rows[start:]
        block[n:] = 0
        results.append(row_wise(block.reshape(block.shape[0], -1))[:n])
    return results[0] if len(results) == 1 else torch.cat(results)
