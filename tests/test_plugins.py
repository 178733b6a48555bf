"""Plugin discovery: entry points, broken plugins, duplicate names, limiting what loads."""

import importlib
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


def metric_module(metric_name: str, *more: str):
    classes = [
        type(
            n.title(),
            (Metric,),
            {"__doc__": "A metric.", "name": n, "compute": lambda self, inputs, n=n: [MetricResult(n, 1.0)]},
        )
        for n in (metric_name, *more)
    ]

    module = types.ModuleType(f"mod_{metric_name.replace('-', '_')}")

    @hookimpl
    def register_metrics(register):
        for cls in classes:
            register(cls)

    module.register_metrics = register_metrics
    return module


def manager_with(monkeypatch, entry_points):
    monkeypatch.setattr("vpeval.registry.metadata.entry_points", lambda group: entry_points)
    manager = PluginManager()
    manager.load_entry_points()
    return manager


def test_broken_plugin_is_listed_and_fails_only_when_used(monkeypatch):
    def boom():
        raise ImportError("No module named 'torchx'")

    manager = manager_with(
        monkeypatch,
        [
            FakeEntryPoint("good", "vpeval-good", lambda: metric_module("good-metric")),
            FakeEntryPoint("bad-metric", "vpeval-bad-metric", boom),
        ],
    )
    assert manager.get("metric", "good-metric").distribution == "vpeval-good"
    assert [b.distribution for b in manager.broken] == ["vpeval-bad-metric"]
    assert "torchx" in manager.broken[0].error
    with pytest.raises(PluginError) as info:
        manager.get("metric", "bad-metric")
    assert "vpeval-bad-metric 2.0 is installed but broken" in str(info.value)
    assert "torchx" in str(info.value)


def test_a_duplicate_name_breaks_both_registrations_and_nothing_else(monkeypatch):
    manager = manager_with(
        monkeypatch,
        [
            FakeEntryPoint("a", "vpeval-first", lambda: metric_module("same", "first-only")),
            FakeEntryPoint("b", "vpeval-second", lambda: metric_module("same")),
            FakeEntryPoint("c", "vpeval-third", lambda: metric_module("third")),
        ],
    )
    # Loading went on: the other classes of both distributions, and other distributions, work.
    assert manager.names("metric") == ["first-only", "third"]
    assert sorted(b.distribution for b in manager.broken) == ["vpeval-first", "vpeval-second"]
    assert all("'same'" in b.error and "vpeval-first" in b.error and "vpeval-second" in b.error for b in manager.broken)
    with pytest.raises(PluginError) as info:
        manager.get("metric", "same")
    sentence = str(info.value)
    assert "vpeval-first 2.0 and vpeval-second 2.0" in sentence and "\n" not in sentence


def test_a_run_naming_a_duplicated_plugin_fails_with_one_sentence(monkeypatch, tmp_path):
    from vpeval.config import load_experiment_text
    from vpeval.errors import ConfigError

    manager = manager_with(
        monkeypatch,
        [
            FakeEntryPoint("a", "vpeval-first", lambda: metric_module("same")),
            FakeEntryPoint("b", "vpeval-second", lambda: metric_module("same")),
        ],
    )
    manager.register_module(importlib.import_module("vpeval.builtin.plugin"), "vpeval", "0")
    (tmp_path / "m.csv").write_text("path,speaker\n")  # validate checks that the manifest exists
    corpus = f"{{use: manifest, params: {{path: {tmp_path / 'm.csv'}}}}}"
    text = f"name: t\ndata: {{corpus: {corpus}}}\nprotocols: [O-O]\nmetrics: [same]\n"
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml", manager=manager)
    assert str(info.value).startswith("exp.yaml, line 4 (metrics[0].use): The metric name 'same' is registered by two")
    assert "vpeval-first" in str(info.value) and "vpeval-second" in str(info.value) and "\n" not in str(info.value)


def test_a_third_registration_of_a_duplicated_name_is_broken_too(monkeypatch):
    manager = manager_with(
        monkeypatch, [FakeEntryPoint(n, f"vpeval-{n}", lambda: metric_module("same")) for n in ("a", "b", "c")]
    )
    assert sorted(b.distribution for b in manager.broken) == ["vpeval-a", "vpeval-b", "vpeval-c"]
    with pytest.raises(PluginError, match="vpeval-a 2.0 and vpeval-b 2.0 and vpeval-c 2.0"):
        manager.get("metric", "same")


def test_load_plugins_env_limits_loading(monkeypatch):
    monkeypatch.setenv("VPEVAL_LOAD_PLUGINS", "vpeval-first")
    manager = manager_with(
        monkeypatch,
        [
            FakeEntryPoint("a", "vpeval-first", lambda: metric_module("one")),
            FakeEntryPoint("b", "vpeval-second", lambda: metric_module("two")),
        ],
    )
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


def test_the_light_import_contract_sees_a_heavy_library(tmp_path, monkeypatch):
    """The contract's subprocess check reports a heavy module that a plugin's import loads."""
    from vpeval.testing.contracts import heavy_modules_after_import

    (tmp_path / "eager_plugin.py").write_text("import sys\nsys.modules['torch'] = sys  # as `import torch` would\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert heavy_modules_after_import("eager_plugin", "corpus", "manifest", "vpeval") == ["torch"]
    assert heavy_modules_after_import("vpeval.builtin.sources", "corpus", "manifest", "vpeval") == []


def test_plugin_context_makes_plugins_from_the_registry(tmp_path):
    from vpeval.api import PluginContext
    from vpeval.builtin.sources import ManifestCorpus
    from vpeval.plugins import plugin_context

    made = plugin_context(seed=5, work_dir=tmp_path).get("corpus", "manifest", {"path": "x.csv"})
    assert isinstance(made, ManifestCorpus) and made.params.path == "x.csv"
    assert made.context.seed == 5 and made.context.work_dir == tmp_path / "corpus-manifest"
    assert made.context.get("corpus", "kaldi", {"root": "r"}).name == "kaldi"  # children can make plugins too
    with pytest.raises(PluginError, match="no plugin factory.*plugin_context"):
        PluginContext(work_dir=tmp_path).get("corpus", "manifest", {"path": "x.csv"})


def test_vpeval_plugins_lists_both_registrations_of_a_duplicate(monkeypatch):
    import json

    from click.testing import CliRunner

    from vpeval.cli import main

    manager = manager_with(
        monkeypatch,
        [
            FakeEntryPoint("a", "vpeval-first", lambda: metric_module("same", "kept")),
            FakeEntryPoint("b", "vpeval-second", lambda: metric_module("same")),
        ],
    )
    monkeypatch.setattr("vpeval.plugins.get_plugin_manager", lambda refresh=False: manager)
    result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    listing = json.loads(result.output)
    assert [p["name"] for p in listing["plugins"]] == ["kept"]
    assert sorted(b["distribution"] for b in listing["broken"]) == ["vpeval-first", "vpeval-second"]
    assert all("registered by two distributions" in b["error"] for b in listing["broken"])
