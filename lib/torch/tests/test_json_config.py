"""JsonConfig: a network shape written as JSON reads back equal, each field as the type it declares."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from vpeval_torch.json_config import JsonConfig


@dataclass(frozen=True)
class Shape(JsonConfig):
    fusion: str
    n_mels: int
    channels: tuple[int, ...]
    rate: float = 16000.0


def test_to_json_lists_the_tuples_in_field_order():
    shape = Shape("mid", 80, (512, 512, 1536))
    expected = '{"fusion": "mid", "n_mels": 80, "channels": [512, 512, 1536], "rate": 16000.0}'
    assert json.dumps(shape.to_json()) == expected


def test_a_saved_config_reads_back_equal():
    shape = Shape("raw", 24, (32, 96), rate=8000.0)
    back = Shape.from_json(json.loads(json.dumps(shape.to_json(), indent=2)))
    assert back == shape and isinstance(back.channels, tuple)


def test_values_take_their_declared_types_and_unknown_keys_are_ignored():
    back = Shape.from_json({"fusion": "ssl", "n_mels": "40", "channels": [16.0, "32"], "rate": 8000, "extra": 1})
    assert back == Shape("ssl", 40, (16, 32), 8000.0)
    assert type(back.n_mels) is int and [type(c) for c in back.channels] == [int, int] and type(back.rate) is float


def test_a_missing_key_takes_the_default_or_raises_key_error():
    assert Shape.from_json({"fusion": "fbank", "n_mels": 80, "channels": [8]}).rate == 16000.0
    with pytest.raises(KeyError, match="n_mels"):
        Shape.from_json({"fusion": "fbank", "channels": [8]})
    with pytest.raises(ValueError):
        Shape.from_json({"fusion": "fbank", "n_mels": "eighty", "channels": [8]})


def test_a_field_type_it_cannot_read_is_refused():
    @dataclass(frozen=True)
    class Odd(JsonConfig):
        weights: dict

    with pytest.raises(TypeError, match="JsonConfig reads"):
        Odd.from_json({"weights": {}})
