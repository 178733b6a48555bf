"""`vpeval describe`: a plugin's docstring and its parameter schema with defaults."""

from __future__ import annotations

import inspect
import json

from pydantic_core import PydanticUndefined

from vpeval.plugins import get_plugin_manager


def describe_plugin(kind: str, name: str) -> str:
    cls = get_plugin_manager().get(kind, name)
    lines = [f"{kind} {cls.name}  ({cls.distribution} {cls.version})", ""]
    doc = inspect.getdoc(cls)
    if doc:
        lines += [doc, ""]
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
        annotation = getattr(info.annotation, "__name__", None) or str(info.annotation).replace("typing.", "")
        lines.append(f"  {field_name}: {annotation} = {default}")
        if info.description:
            lines.append(f"      {info.description}")
    return "\n".join(lines)
