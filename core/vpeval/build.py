"""The one path from what an experiment holds to a plugin instance: strict validation
(vpeval.params), then the class.

`vpeval validate` (config.resolve), the runner, its worker processes and `PluginContext.get` all build
plugins from parameters that vpeval.params validated the same way, so what validate accepts is exactly
what a run builds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from vpeval.api import Params, Plugin, PluginContext
from vpeval.errors import ConfigError, PluginError
from vpeval.params import validate_params  # also imported from here by plugins' tests
from vpeval.registry import PluginManager, get_plugin_manager
from vpeval.schema import ResolvedPlugin


def build_resolved(manager: PluginManager, plugin: ResolvedPlugin, context: PluginContext) -> Plugin:
    """The instance a resolved experiment's plugin describes (resolve validated its params and their dump)."""
    cls = manager.get(plugin.kind, plugin.use)
    try:
        params = validate_params(cls, plugin.params)
    except ValidationError as exc:
        raise PluginError(
            f"the {plugin.kind} {plugin.use} of this resolved experiment no longer accepts its parameters "
            f"({_sentences(exc)}); validate the experiment file again with the installed "
            f"{cls.distribution} {cls.version}."
        ) from None
    instance = cls(params, context)
    context.apply_threads()
    return instance


def build_helper(
    cls: type[Plugin], raw: Mapping[str, Any] | None, context: Callable[[Params], PluginContext]
) -> Plugin:
    """The helper plugin (an encoder, an ASR, a pool corpus) that another plugin asks for through
    `PluginContext.get`; `context` makes its context from its validated params (its work folder).

    The caller's values may be Python ones (a tuple, a path, a model's python dump): they become their
    JSON form first, as in a dump; what the user wrote was checked strictly when the experiment loaded.
    """
    try:
        params = validate_params(cls, _jsonable(raw))
    except ValidationError as exc:
        raise ConfigError(
            f"the {cls.kind} {cls.name} was asked for with parameters it refuses ({_sentences(exc)}); "
            "give them in the experiment file in the form its fields take."
        ) from None
    return cls(params, context(params))  # its owner already set the run's threads


def plugin_context(
    seed: int = 0, work_dir: str | Path = ".vpeval-work", manager: PluginManager | None = None, **fields: Any
) -> PluginContext:
    """A PluginContext whose `get` makes plugins from the installed registry, for scripts and tests.

    The runner makes its own contexts (with its cache folders and progress bars); anything else that
    hands a plugin a context from which it may `get` another plugin makes it here. `fields` are other
    PluginContext fields (threads, workers, options, ...). Without an `executor`, `map` runs on the `local`
    executor sized by `workers`, as in a run (forked worker processes when there are more than one).
    """
    if fields.get("executor") is None:
        from vpeval.builtin.local_executor import LocalProcesses

        fields["executor"] = LocalProcesses(context=PluginContext(workers=fields.get("workers", 1)))
    context = PluginContext(seed=seed, work_dir=Path(work_dir), **fields)
    registry = manager

    def make(kind: str, name: str, params: dict | None) -> Plugin:
        cls = (registry or get_plugin_manager()).get(kind, name)
        return build_helper(cls, params, lambda _validated: context.child(f"{kind}-{name}"))

    context.plugin_factory = make
    return context


def _jsonable(raw: Any) -> Any:
    """Python values as their JSON form (a tuple as a list, a path as text, numpy numbers as numbers);
    what has none stays as it is, for validate_params to name."""
    try:
        return to_jsonable_python(raw, fallback=_numpy_to_list)
    except (ValueError, TypeError):
        return raw


def _numpy_to_list(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} has no JSON form")


def _sentences(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'params'}: {e['msg']}" for e in exc.errors())
