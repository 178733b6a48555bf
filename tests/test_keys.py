"""vpeval.keys: one seed formula for every random draw, giving the numbers the three copies it replaced gave."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.keys import keyed_rng, stable_int
from vpeval.run.anonymize_task import voice_rng

SEEDS = [0, 1, 2024, 2**32 - 1, 2**32, 2**40 + 5]
KEYS = [(), ("spk1",), ("split", "f"), ("side", "enroll", "s3", 2), ("voice", 0, "utt-1"), (1.5, None, "x/y")]


def old_stable_int(*parts: object) -> int:
    """vpeval.api.stable_int as written before vpeval.keys existed."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def old_rng(seed: int, *keys: object) -> np.random.Generator:
    """The formula that api.py, run/anonymize_task.py and data/plan.py each wrote out."""
    return np.random.default_rng([seed & 0xFFFFFFFF, old_stable_int(*keys)])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("keys", KEYS)
def test_keyed_rng_draws_what_the_old_formula_drew(seed, keys):
    assert stable_int(*keys) == old_stable_int(*keys)
    assert keyed_rng(seed, *keys).integers(0, 2**62, 5).tolist() == old_rng(seed, *keys).integers(0, 2**62, 5).tolist()
    assert PluginContext(seed=seed).rng(*keys).normal(size=3).tolist() == old_rng(seed, *keys).normal(size=3).tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_voices_generator_is_the_old_one(seed):
    assert (
        voice_rng(seed, 1, "utt-7").uniform(size=4).tolist()
        == old_rng(seed, "voice", 1, "utt-7").uniform(size=4).tolist()
    )


def test_the_numbers_are_pinned():
    """Values computed with the code before the move: a change here changes every run's draws."""
    assert stable_int("speaker", 7, "x") == 1508088289451717589
    assert stable_int() == 724655455495936113
    assert keyed_rng(2**40 + 5, "split", "f").integers(0, 2**62, 3).tolist() == [
        5244080511661375,
        4252776151087105287,
        2341016553667239105,
    ]
    assert PluginContext(seed=3).rng("spk1").normal(size=2).tolist() == [0.49705320607616493, -0.2618792039640789]


def test_different_keys_or_seeds_give_different_draws():
    first = keyed_rng(1, "a").integers(0, 2**62)
    assert first != keyed_rng(1, "b").integers(0, 2**62)
    assert first != keyed_rng(2, "a").integers(0, 2**62)
