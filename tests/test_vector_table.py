"""vpeval.vector_table: vectors by key in one growing array; every take equals a dictionary of the rows
given, through growth, replacement and interleaved adds, on random vectors."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.vector_table import VectorTable


def test_takes_equal_a_dictionary_of_the_rows_through_growth_and_replacement():
    rng = np.random.default_rng(0)
    table, truth = VectorTable(np.float64), {}
    for _ in range(30):  # 30 adds of up to 40 keys over 300 possible: the array grows past 16 rows many times
        keys = list(dict.fromkeys(int(k) for k in rng.integers(0, 300, size=rng.integers(1, 40))))
        rows = rng.standard_normal((len(keys), 3, 2)).astype(np.float32)
        table.add(keys, rows)
        truth.update(zip(keys, rows.astype(np.float64)))
        asked = [int(k) for k in rng.choice(list(truth), size=50)]
        got = table.take(asked)
        assert got.dtype == np.float64 and got.shape == (50, 3, 2)
        assert np.array_equal(got, np.stack([truth[k] for k in asked]))
    assert len(table) == len(truth) and table.shape == (3, 2)
    assert table.missing([1, 1000, 1000, 2000, 1]) == [k for k in (1, 1000, 2000) if k not in truth]


def test_a_take_is_a_copy_and_the_dtype_is_kept_without_one_given():
    table = VectorTable()
    table.add(["a", "b"], np.ones((2, 4), dtype=np.float32))
    out = table.take(["b"])
    out[:] = 7
    assert table.take(["b"]).tolist() == [[1.0] * 4] and table.take(["a"]).dtype == np.float32


def test_wrong_input_is_refused():
    table = VectorTable()
    with pytest.raises(ValueError, match="2 keys were given with 3 vectors"):
        table.add(["a", "b"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="given twice in one call"):
        table.add(["a", "a"], np.zeros((2, 2)))
    table.add(["a"], np.zeros((1, 2)))
    with pytest.raises(ValueError, match=r"rows of shape \(3,\) cannot join a table of rows \(2,\)"):
        table.add(["b"], np.zeros((1, 3)))
    with pytest.raises(KeyError):
        table.take(["nope"])


def test_empty_and_cleared_tables():
    table = VectorTable()
    assert table.take([]).shape[0] == 0 and table.shape is None
    with pytest.raises(KeyError):
        table.take(["a"])
    table.add(["a"], np.zeros((1, 2)))
    table.add([], np.zeros((0, 2)))
    table.clear()
    assert len(table) == 0 and "a" not in table and table.missing(["a"]) == ["a"]
