"""`vpeval describe`: a plugin's docstring and its parameter schema with defaults, wrapped to the terminal."""

from __future__ import annotations

import inspect
import json
import shutil
import textwrap
import typing

from pydantic_core import PydanticUndefined

from vpeval.plugins import get_plugin_manager


def describe_plugin(kind: str, name: str, width: int | None = None) -> str:
    width = width or shutil.get_terminal_size((100, 24)).columns
    cls = get_plugin_manager().get(kind, name)
    lines = [f"{kind} {cls.name}  ({cls.distribution} {cls.version})", ""]
    doc = inspect.getdoc(cls)
    if doc:
        lines += [*_wrapped(doc, width, ""), ""]
    for attr in ("sample_rate", "frame_rate", "needs", "works_on", "needs_training", "uses_frontend", "dim"):
        if attr in vars(cls) or any(attr in vars(b) for b in cls.__mro__[1:-1] if b.__module__ != "vpeval.api"):
            lines.append(f"{attr}: {getattr(cls, attr)}")
    lines += ["", "Parameters:"]
    fields = cls.Params.model_fields
    if not fields:
        lines.append("  (none)")
    for field_name, info in fields.items():
        if info.default is not PydanticUndefined:
            default = json.dumps(info.default, default=str)
        elif info.default_factory is not None:
            default = json.dumps(info.default_factory(), default=str)
        else:
            default = "(required)"
        lines += _wrapped(f"{field_name}: {_type_name(info.annotation)} = {default}", width, "  ", "      ")
        if info.description:
            lines += _wrapped(info.description, width, "      ")
    return "\n".join(lines)


def _type_name(annotation) -> str:
    """A Literal's choices are the useful part of its type: `one of "a", "b"`."""
    if typing.get_origin(annotation) is typing.Literal:
        return "one of " + ", ".join(json.dumps(choice) for choice in typing.get_args(annotation))
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def _wrapped(text: str, width: int, indent: str, later: str | None = None) -> list[str]:
    out = []
    for paragraph in text.splitlines() or [""]:
        out += textwrap.wrap(
            paragraph, width, initial_indent=indent, subsequent_indent=later or indent, break_on_hyphens=False
        ) or [""]
    return out
