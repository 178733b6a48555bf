"""Plugin discovery: entry points, broken plugins, duplicate names, limiting what loads."""

import types
from dataclasses import dataclass

import pytest

from vpeval import hookimpl
from vpeval.api import Metric
from vpeval.errors import PluginError
from vpeval.plugins import PluginManager
from vpeval.types import MetricResult


@dataclass
class FakeDist:
    name: str
    version: str


class FakeEntryPoint:
    def __init__(self, name, dist, loader):
        self.name, self.dist, self._loader = name, FakeDist(dist, "2.0"), loader

    def load(self):
        return self._loader()


def metric_module(metric_name: str):
    cls = type(metric_name.title(), (Metric,), {"__doc__": "A metric.", "name": metric_name,
                                                "compute": lambda self, inputs: [MetricResult(metric_name, 1.0)]})

    module = types.ModuleType(f"mod_{metric_name.replace('-', '_')}")

    @hookimpl
    def register_metrics(register):
        register(cls)

    module.register_metrics = register_metrics
    return module


def manager_with(monkeypatch, entry_points):
    monkeypatch.setattr("vpeval.plugins.metadata.entry_points", lambda group: entry_points)
    manager = PluginManager()
    manager.load_entry_points()
    return manager


def test_broken_plugin_is_listed_and_fails_only_when_used(monkeypatch):
    def boom():
        raise ImportError("No module named 'torchx'")

    manager = manager_with(monkeypatch, [
        FakeEntryPoint("good", "vpeval-good", lambda: metric_module("good-metric")),
        FakeEntryPoint("bad-metric", "vpeval-bad-metric", boom),
    ])
    assert manager.get("metric", "good-metric").distribution == "vpeval-good"
    assert [b.distribution for b in manager.broken] == ["vpeval-bad-metric"]
    assert "torchx" in manager.broken[0].error
    with pytest.raises(PluginError) as info:
        manager.get("metric", "bad-metric")
    assert "vpeval-bad-metric 2.0 is installed but broken" in str(info.value)
    assert "torchx" in str(info.value)


def test_duplicate_names_name_both_distributions(monkeypatch):
    with pytest.raises(PluginError) as info:
        manager_with(monkeypatch, [
            FakeEntryPoint("a", "vpeval-first", lambda: metric_module("same")),
            FakeEntryPoint("b", "vpeval-second", lambda: metric_module("same")),
        ])
    assert "vpeval-first" in str(info.value) and "vpeval-second" in str(info.value)


def test_load_plugins_env_limits_loading(monkeypatch):
    monkeypatch.setenv("VPEVAL_LOAD_PLUGINS", "vpeval-first")
    manager = manager_with(monkeypatch, [
        FakeEntryPoint("a", "vpeval-first", lambda: metric_module("one")),
        FakeEntryPoint("b", "vpeval-second", lambda: metric_module("two")),
    ])
    assert manager.names("metric") == ["one"]


def test_unknown_hook_in_a_plugin_is_reported_broken(monkeypatch):
    module = types.ModuleType("typo_plugin")

    @hookimpl
    def register_metricz(register):
        pass

    module.register_metricz = register_metricz
    manager = manager_with(monkeypatch, [FakeEntryPoint("t", "vpeval-typo", lambda: module)])
    assert manager.broken and "register_metricz" in manager.broken[0].error


def test_registering_a_non_plugin_class_is_broken(monkeypatch):
    module = types.ModuleType("wrong_kind")

    @hookimpl
    def register_metrics(register):
        register(dict)

    module.register_metrics = register_metrics
    manager = manager_with(monkeypatch, [FakeEntryPoint("w", "vpeval-wrong", lambda: module)])
    assert manager.broken and "not a subclass" in manager.broken[0].error


def test_unknown_name_suggests_close_names(monkeypatch):
    manager = manager_with(monkeypatch, [FakeEntryPoint("a", "vpeval-a", lambda: metric_module("min-cllr"))])
    with pytest.raises(PluginError) as info:
        manager.get("metric", "min-cll")
    assert "did you mean 'min-cllr'" in str(info.value)


def test_builtin_corpus_sources_are_registered():
    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    assert {"manifest", "kaldi"} <= set(manager.names("corpus"))
    assert manager.registry["corpus"]["manifest"].distribution == "vpeval"
