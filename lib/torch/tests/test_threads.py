"""thread_map: every core on whole batches, the numbers of one batch computed alone, whatever `workers` is."""

import threading

import pytest
import torch

from vpeval_torch.ecapa import ecapa_tdnn
from vpeval_torch.threads import longest_first, thread_map


def _batches() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(3)
    return [torch.randn(3, 200 + 37 * i, 40, generator=generator) for i in range(6)]


def test_batches_on_two_threads_equal_one_thread_bit_for_bit():
    torch.manual_seed(0)
    network = ecapa_tdnn(40, (64, 64, 64, 64, 192), attention_channels=16, embedding_dim=32).eval()
    seen = set()

    def embed(frames: torch.Tensor) -> torch.Tensor:
        seen.add(threading.get_ident())
        with torch.inference_mode():
            return network(frames)

    alone = list(thread_map(embed, _batches(), workers=1))
    seen.clear()
    together = list(thread_map(embed, _batches(), workers=2))
    assert len(seen) == 2  # the batches did run on two threads
    assert len(alone) == len(together) == 6
    for a, b in zip(alone, together):
        assert torch.equal(a, b)


def test_order_kept_and_thread_count_restored():
    previous = torch.get_num_threads()
    counts = []

    def square(x: int) -> int:
        counts.append(torch.get_num_threads())
        return x * x

    assert list(thread_map(square, range(20), workers=3, threads=1)) == [x * x for x in range(20)]
    assert set(counts) == {1}  # each thread runs torch at the experiment's thread count
    assert torch.get_num_threads() == previous


def test_an_error_in_a_batch_reaches_the_caller():
    def fail(x: int) -> int:
        if x == 4:
            raise ValueError("bad batch 4")
        return x

    with pytest.raises(ValueError, match="bad batch 4"):
        list(thread_map(fail, range(8), workers=2))


def test_a_long_item_at_the_head_does_not_idle_the_other_threads():
    """Items 1-5 finish while item 0 still runs: the other thread keeps taking work past the head."""
    others_done = threading.Event()
    finished: list[int] = []

    def work(x: int) -> bool:
        if x == 0:
            return others_done.wait(timeout=10)  # False: the queue stopped behind item 0
        finished.append(x)
        if len(finished) == 5:
            others_done.set()
        return True

    assert list(thread_map(work, range(8), workers=2)) == [True] * 8


def test_longest_first_orders_groups_by_total_size():
    sizes = [5, 1, 1, 9, 2, 2]
    groups = [[1, 2], [0], [3], [4, 5]]  # totals 2, 5, 9, 4
    assert longest_first(groups, sizes) == [2, 1, 3, 0]
    assert longest_first([[0], [1, 2]], [2, 1, 1]) == [0, 1]  # ties keep their order
    assert longest_first([], sizes) == []


def test_grouped_map_places_each_result_at_its_position():
    from vpeval_torch.threads import grouped_map

    groups = [[4, 0], [2], [1, 3]]
    for workers in (1, 2):
        out = grouped_map(lambda group: [f"item{i}" for i in group], groups, 5, workers)
        assert out == [f"item{i}" for i in range(5)]
