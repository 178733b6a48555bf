"""A network's shape as JSON next to its weights, read back with the types its dataclass declares."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Self


class JsonConfig:
    """Mixin for a frozen dataclass whose fields are int, float, str or tuple[X, ...] of those.

    to_json gives a dict in field order with tuples as lists (what json.dumps writes); from_json turns
    each declared field back into its type, so a config read from disk equals the one that was saved.
    Keys the dataclass does not declare are ignored and a missing key takes the field's default; one
    without a default raises KeyError, a value of the wrong kind ValueError or TypeError, which the
    plugin reading the file turns into its own error.
    """

    def to_json(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)
        return {name: list(value) if isinstance(value, tuple) else value for name, value in values.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        types = typing.get_type_hints(cls)
        fields = [f for f in dataclasses.fields(cls) if f.name in data or f.default is dataclasses.MISSING]
        return cls(**{f.name: _read(types[f.name], data[f.name]) for f in fields})


def _read(kind: Any, value: Any) -> Any:
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]  # tuple[X, ...]
        return tuple(_read(item, v) for v in value)
    if kind in (int, float, str):
        return kind(value)
    raise TypeError(f"JsonConfig reads int, float, str and tuple[X, ...] fields, not {kind}")
