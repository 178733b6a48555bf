"""Finding plugins: entry points in the `vpeval` group, registration, lookup with clear errors.

Lookup only: making a plugin from its class is vpeval.build's, which imports this module, never the reverse."""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType

import pluggy

from vpeval import hookspecs
from vpeval.api import KINDS, Plugin
from vpeval.errors import PluginError, did_you_mean

ENTRY_POINT_GROUP = "vpeval"
LOAD_ENV = "VPEVAL_LOAD_PLUGINS"


@dataclass
class BrokenPlugin:
    """An installed plugin that failed to import or to register."""

    entry_point: str
    distribution: str
    version: str
    error: str


@dataclass
class Registration:
    cls: type[Plugin]
    distribution: str
    version: str


@dataclass
class PluginManager:
    """The registry of plugin classes by kind and name.

    A name that two distributions register for one kind is in neither `registry` nor `names`: both
    registrations are listed in `broken`, and `get` names both distributions.
    """

    pm: pluggy.PluginManager = field(default_factory=lambda: pluggy.PluginManager("vpeval"))
    registry: dict[str, dict[str, Registration]] = field(default_factory=lambda: {k: {} for k in KINDS})
    broken: list[BrokenPlugin] = field(default_factory=list)
    conflicts: dict[tuple[str, str], list[Registration]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pm.add_hookspecs(hookspecs)

    # -- loading ---------------------------------------------------------------------------

    def load_entry_points(self) -> None:
        wanted = os.environ.get(LOAD_ENV)
        allowed = None if wanted is None else {n.strip() for n in wanted.split(",") if n.strip()}
        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            dist = ep.dist.name if ep.dist is not None else "?"
            version = ep.dist.version if ep.dist is not None else "?"
            if allowed is not None and dist not in allowed and _normal(dist) not in {_normal(a) for a in allowed}:
                continue
            try:
                module = ep.load()
            except Exception as exc:  # a broken plugin must not break the others
                self.broken.append(BrokenPlugin(ep.name, dist, version, _one_line(exc)))
                continue
            self.register_module(module, dist, version, name=f"{dist}:{ep.name}")

    def register_module(
        self, module: ModuleType | object, distribution: str, version: str, name: str | None = None
    ) -> None:
        """Register one plugin module (its hook implementations) and collect the classes it provides."""
        plugin_name = name or f"{distribution}:{getattr(module, '__name__', id(module))}"
        try:
            self.pm.register(module, name=plugin_name)
            self.pm.check_pending()
        except Exception as exc:
            if self.pm.is_registered(module):
                self.pm.unregister(module)
            self.broken.append(BrokenPlugin(plugin_name, distribution, version, _one_line(exc)))
            return
        new: list[tuple[str, type[Plugin]]] = []
        others = [p for p in self.pm.get_plugins() if p is not module]
        try:
            for hook_name, kind in hookspecs.HOOK_KINDS.items():
                # pluggy's own caller, limited to this module so each class keeps its distribution; it
                # passes each implementation only the arguments it declares (old plugins keep working).
                caller = self.pm.subset_hook_caller(hook_name, remove_plugins=others)
                caller(register=lambda cls, _k=kind: new.append((_k, cls)), core_version=core_version())
            for kind, cls in new:
                self._check_class(kind, cls)
        except Exception as exc:
            self.pm.unregister(module)
            self.broken.append(BrokenPlugin(plugin_name, distribution, version, _one_line(exc)))
            return
        for kind, cls in new:
            self._add(kind, cls, distribution, version, plugin_name)

    def unregister_module(self, module: object) -> None:
        """Remove a module and the classes it registered (tests use this to clean up fakes)."""
        if self.pm.is_registered(module):
            self.pm.unregister(module)
        mod_name = getattr(module, "__name__", None)
        for kind in self.registry.values():
            for name in [
                n
                for n, r in kind.items()
                if getattr(r.cls, "_registered_by", None) is module or r.cls.__module__ == mod_name
            ]:
                del kind[name]
        for (kind, name), regs in list(self.conflicts.items()):
            left = [r for r in regs if r.cls.__module__ != mod_name]
            if len(left) < len(regs):
                self.broken = [b for b in self.broken if b.error != _conflict_message(kind, name, regs)]
                del self.conflicts[(kind, name)]
                for reg in left:
                    self._add(kind, reg.cls, reg.distribution, reg.version, reg.distribution)

    def _check_class(self, kind: str, cls: type) -> None:
        base = KINDS[kind]
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise TypeError(f"{cls!r} is registered as a {kind} but is not a subclass of vpeval.api.{base.__name__}")
        if not cls.name:
            raise TypeError(f"{cls.__name__} has no `name`")

    def _add(self, kind: str, cls: type[Plugin], distribution: str, version: str, source: str) -> None:
        new = Registration(cls, distribution, version)
        key = (kind, cls.name)
        existing = self.registry[kind].get(cls.name)
        if key in self.conflicts or (existing is not None and existing.cls is not cls):
            # Both (all) registrations of the name are broken; every other plugin keeps working.
            regs = self.conflicts.pop(key, None) or [self.registry[kind].pop(cls.name)]
            self.broken = [b for b in self.broken if b.error != _conflict_message(kind, cls.name, regs)]
            regs.append(new)
            self.conflicts[key] = regs
            sentence = _conflict_message(kind, cls.name, regs)
            self.broken += [
                BrokenPlugin(f"{r.distribution}: {kind} {cls.name}", r.distribution, r.version, sentence) for r in regs
            ]
            return
        cls.distribution = distribution
        cls.version = version
        self.registry[kind][cls.name] = new

    # -- lookup ----------------------------------------------------------------------------

    def names(self, kind: str) -> list[str]:
        return sorted(self.registry[kind])

    def get(self, kind: str, name: str) -> type[Plugin]:
        if kind not in self.registry:
            raise PluginError(unknown_kind_message(kind))
        if (kind, name) in self.conflicts:
            raise PluginError(_conflict_message(kind, name, self.conflicts[(kind, name)]))
        reg = self.registry[kind].get(name)
        if reg is not None:
            return reg.cls
        raise PluginError(self.unknown_message(kind, name))

    def unknown_message(self, kind: str, name: str) -> str:
        msg = f"No {kind} plugin named '{name}' is installed"
        close = difflib.get_close_matches(name, self.names(kind), n=3, cutoff=0.5)
        if close:
            msg += "; did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
        else:
            available = self.names(kind)
            msg += f"; installed {kind} plugins: {', '.join(available) if available else 'none'}."
        suspects = [
            b
            for b in self.broken
            if _normal(name) in _normal(b.distribution) or _normal(name) == _normal(b.entry_point.split(":")[-1])
        ]
        for b in suspects or self.broken:
            msg += f" (Plugin {b.distribution} {b.version} is installed but broken: {b.error})"
            if not suspects:
                break
        return msg

    def all(self) -> list[tuple[str, Registration]]:
        return [
            (kind, reg)
            for kind in self.registry
            for reg in sorted(self.registry[kind].values(), key=lambda r: r.cls.name)
        ]


def unknown_kind_message(kind: str) -> str:
    hint = did_you_mean(kind, KINDS)
    return f"Unknown plugin kind '{kind}'{hint + ' The' if hint else '; the'} kinds are: {', '.join(KINDS)}."


def _conflict_message(kind: str, name: str, regs: list[Registration]) -> str:
    dists = " and ".join(f"{r.distribution} {r.version}" for r in regs)
    return (
        f"The {kind} name '{name}' is registered by two distributions, {dists}, so neither is used; "
        f"uninstall one of them or limit loading with {LOAD_ENV}."
    )


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace("vpeval-", "")


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().replace("\n", " ")
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno})"
    return text


_manager: PluginManager | None = None


def get_plugin_manager(refresh: bool = False) -> PluginManager:
    """The process-wide manager with built-in and installed plugins loaded."""
    global _manager
    if _manager is None or refresh:
        manager = PluginManager()
        builtins = importlib.import_module("vpeval.builtin.plugin")
        manager.register_module(builtins, "vpeval", core_version(), name="vpeval:builtins")
        manager.load_entry_points()
        _manager = manager
    return _manager


@functools.cache
def core_version() -> str:
    try:
        return metadata.version("vpeval")
    except metadata.PackageNotFoundError:
        return "0+unknown"
