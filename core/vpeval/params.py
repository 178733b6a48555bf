"""A plugin's parameters validated strictly, the one validation `vpeval validate`, the runner and
`PluginContext.get` share (vpeval.build makes plugins with it).

Parameters are validated in pydantic's strict JSON mode: the types YAML and JSON share pass (a list for a
tuple, a string for a path, a mapping for a nested model) and nothing is coerced ('20' is no int, 2.0 is
no int, true is no number, 1 is no bool). Resolved experiments hold `model_dump(mode="json")` of the
validated params, and `round_trip_problem` checks that this dump validates again to the same params.
A ground-floor leaf: it imports only vpeval.api.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from vpeval.api import Params, Plugin


def validate_params(cls: type[Plugin], raw: Mapping[str, Any] | None) -> Params:
    """`cls.Params` validated strictly from `raw` (the experiment's mapping, or resolved.yaml's).

    Raises pydantic's ValidationError, whose errors carry the field's location; a value JSON cannot
    carry (a YAML date, binary or set) is one of those errors too.
    """
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise _error(cls, (), raw, "parameters are a mapping of parameter names to values, such as {epochs: 2}")
    found = _not_json(raw, ())
    if found is not None:
        loc, value, sentence = found
        raise _error(cls, loc, value, sentence)
    return cls.Params.model_validate_json(json.dumps(raw, allow_nan=True), strict=True)


def round_trip_problem(cls: type[Plugin], validated: Params) -> str | None:
    """None when the params' JSON dump (what resolved.yaml and the runner read) validates again to the
    same params; otherwise what went wrong, which is a bug in the plugin's Params (for example a check
    that reads `model_fields_set`, which the dump fills with every field)."""
    dumped = validated.model_dump(mode="json")
    try:
        again = validate_params(cls, dumped)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        return f"its dump does not validate again ({where}: {first['msg']})"
    redumped = again.model_dump(mode="json")
    # Different dumps, or equal dumps of different models (state the dump leaves out); a NaN makes
    # both comparisons fail where it is the same value, so the dumps are compared as JSON text.
    if _canonical(redumped) != _canonical(dumped) or (again != validated and redumped == dumped):
        return "its dump validates to different parameters"
    return None


# -- values YAML can hold that JSON cannot --------------------------------------------------------


def _not_json(value: Any, loc: tuple) -> tuple[tuple, Any, str] | None:
    """(location, value, sentence) of the first value below `value` that JSON cannot carry, or None."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return (
                    loc,
                    key,
                    (f"parameter names and mapping keys are text; write the key {key!r} in quotes ('{key}')"),
                )
            found = _not_json(item, loc + (key,))
            if found is not None:
                return found
        return None
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found = _not_json(item, loc + (i,))
            if found is not None:
                return found
        return None
    if isinstance(value, (datetime.date, datetime.time)):
        shown = str(value)  # as YAML wrote it: 2024-01-01 10:30:00
        return (
            loc,
            value,
            (
                f"an unquoted {shown} is a date or time in YAML, which no parameter takes; write it in "
                f"quotes ('{shown}') if it is text"
            ),
        )
    if isinstance(value, (bytes, bytearray)):
        return loc, value, "a YAML !!binary value is not a parameter value; give a file path or text instead"
    if isinstance(value, (set, frozenset)):
        return loc, value, "a YAML !!set is not a parameter value; write a list such as [a, b]"
    return (
        loc,
        value,
        (f"a {type(value).__name__} is not a parameter value; give text, a number, true/false, a list or a mapping"),
    )


def _error(cls: type[Plugin], loc: tuple, value: Any, sentence: str) -> ValidationError:
    # the sentence names the value already (a !!binary value may be long), so no input is shown
    detail = InitErrorDetails(type=PydanticCustomError("not_a_parameter_value", sentence), loc=loc, input=None)
    return ValidationError.from_exception_data(cls.Params.__name__, [detail])


def _canonical(value: Any) -> str:
    """JSON text with sorted keys; NaN compares equal to itself here, unlike in Python."""
    return json.dumps(value, sort_keys=True, allow_nan=True, default=str)
