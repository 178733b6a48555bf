"""docs/plugin-hooks.md names every field a plugin gets: the kinds' class attributes, PluginContext's
public fields and methods, and Voice's fields. One added to the API without a line in the guide fails."""

import dataclasses
import inspect
from pathlib import Path

from vpeval import api
from vpeval.types import Utterance

GUIDE = (Path(__file__).parents[1] / "docs" / "plugin-hooks.md").read_text(encoding="utf-8")


def named(name: str) -> bool:
    return f"`{name}`" in GUIDE or f"`{name}(" in GUIDE


def public(names):
    return {n for n in names if not n.startswith("_")}


def test_every_class_attribute_of_every_kind_is_in_the_guide():
    kinds = [c for _, c in inspect.getmembers(api, inspect.isclass) if issubclass(c, api.Plugin)]
    attributes = set()
    for cls in kinds:
        attributes |= public(n for n in getattr(cls, "__annotations__", {}) if n != "kind")
    assert {"sample_rate", "works_on", "needs", "device_sensitive"} <= attributes  # the walk finds them
    assert not {a for a in attributes if not named(a)}, "class attributes missing from docs/plugin-hooks.md"


def test_every_context_field_and_method_and_voice_field_is_in_the_guide():
    context = public(f.name for f in dataclasses.fields(api.PluginContext))
    context |= public(n for n, _ in inspect.getmembers(api.PluginContext) if not n.startswith("__"))
    voice = {f.name for f in dataclasses.fields(api.Voice)}
    utterance = {f.name for f in dataclasses.fields(Utterance)} | {"load"}
    missing = sorted(n for n in context | voice | utterance if not named(n))
    assert not missing, f"not in docs/plugin-hooks.md: {missing}"
