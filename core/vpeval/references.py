"""The plugins that a plugin's validated params name through PluginRef fields (vpeval.api.PluginRef):
what `vpeval validate` checks recursively and the runner's helpers are built from. A ground-floor leaf, so
the experiment's cross-field checks (vpeval.config_checks) can read it too."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from vpeval.api import PluginRef
from vpeval.params import validate_params

Loc = tuple[str | int, ...]
MAX_NESTING = 8  # a plugin whose defaults name itself would otherwise recurse forever


def reference_target(ref: PluginRef, params: BaseModel, field_name: str, loc: Loc) -> tuple[Any, Any, Loc, Loc]:
    """(name, its params, location of the name, location of its params) of the plugin a PluginRef field names."""
    value = getattr(params, field_name)
    if ref.name is not None:  # a fixed plugin: the field holds its params
        nested = value if value is not None else {}
        return (
            ref.name,
            nested.model_dump(mode="json") if isinstance(nested, BaseModel) else nested,
            loc + (field_name,),
            loc + (field_name,),
        )
    if isinstance(value, (BaseModel, dict)):  # a {use, params} mapping or model
        spec = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        return spec.get("use"), spec.get("params") or {}, loc + (field_name, "use"), loc + (field_name, "params")
    nested = getattr(params, ref.params) if ref.params else {}
    return value, nested, loc + (field_name,), loc + (ref.params,) if ref.params else loc + (field_name,)


def named_plugins(manager, params: BaseModel, depth: int = 0) -> list[tuple[str, str, Any]]:
    """(kind, name, params) of every plugin that validated `params` name through PluginRef fields, and of
    those that these name in turn: the helpers a plugin may ask for with `PluginContext.get`."""
    found: list[tuple[str, str, Any]] = []
    if depth > MAX_NESTING:
        return found
    for field_name, info in type(params).model_fields.items():
        ref = next((m for m in info.metadata if isinstance(m, PluginRef)), None)
        if ref is not None:
            name, nested, _, _ = reference_target(ref, params, field_name, ())
            if isinstance(name, str) and name not in ref.keywords:
                nested = nested.model_dump(mode="json") if isinstance(nested, BaseModel) else nested
                found.append((ref.kind, name, nested))
                found += named_plugins(manager, validate_params(manager.get(ref.kind, name), nested), depth + 1)
        for _, model in models_in(getattr(params, field_name), ()):
            found += named_plugins(manager, model, depth)
    return found


def models_in(value: Any, loc: Loc):
    """Pydantic models inside a params value (nested models, lists and dicts of them), with their loc."""
    if isinstance(value, BaseModel):
        yield loc, value
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from models_in(item, loc + (i,))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from models_in(item, loc + (key,))
