"""The core's import graph: floors, lowest first, where no module imports a higher floor; no cycles among
modules nor between folders; vpeval.api on the ground floor, cheap to import for plugins. Every import
counts: lazy ones inside functions and TYPE_CHECKING ones too, since both hide cycles
(tests/test_import_cycles.py checks the core, the plugins and lib/ for cycles with grimp)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import vpeval

CORE = Path(vpeval.__file__).parent

# The core's floors, lowest first. A module imports modules of its own floor or of lower floors, never of a
# higher one. A package (data/, builtin/, report/, run/, testing/) lies whole on one floor; a top-level
# module not named here is on the ground floor, which holds the leaves that plugins and every floor
# above use: vpeval.api and what it imports (errors, settings, types, audio, executor, keys), names,
# atomic, codehash, report_spec, params (strict validation), schema (the experiment and its resolved form),
# references and config_checks, ...
GROUND = "ground"
FLOORS = [
    (GROUND, set()),
    ("data readers", {"vpeval.data", "vpeval.content_cache", "vpeval.scorefile"}),
    ("built-in plugins", {"vpeval.builtin"}),
    (
        "plugin registry and experiment",
        {"vpeval.registry", "vpeval.build", "vpeval.plugins", "vpeval.config", "vpeval.boundary"},
    ),
    ("report", {"vpeval.report"}),
    ("run", {"vpeval.run"}),
    ("commands", {"vpeval.cli", "vpeval.__main__", "vpeval.metrics_cli", "vpeval.describe", "vpeval.scaffold"}),
    ("test helpers for plugins", {"vpeval.testing"}),  # nothing in the core imports them
]
LEVEL = {member: level for level, (_floor, members) in enumerate(FLOORS) for member in members}


def module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in CORE.rglob("*.py")}


def imports_of(name: str, source: str | None = None) -> set[str]:
    """Core modules that `name` imports anywhere: top level, inside functions, under TYPE_CHECKING."""
    tree = ast.parse(source if source is not None else MODULES[name].read_text(encoding="utf-8"))
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args:
            if isinstance(node.args[0], ast.Constant):
                found.add(node.args[0].value)
    return {m for m in found if m in MODULES and m != name}


def folder_of(name: str) -> str:
    """The package (vpeval.data, vpeval.run, ...) that holds `name`, or `name` itself for a top-level module."""
    parts = name.split(".")
    package = ".".join(parts[:2])
    return package if len(parts) > 2 or MODULES[package].name == "__init__.py" else name


def floor_of(name: str) -> int:
    folder = folder_of(name)
    if folder in LEVEL:
        return LEVEL[folder]
    if MODULES[folder].name == "__init__.py" and folder != "vpeval":
        raise AssertionError(f"the package {folder} is on no floor: add it to FLOORS in {Path(__file__).name}")
    return LEVEL.get(folder, 0)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module on a higher floor than the importer's, as a sentence."""
    found = []
    for m in sorted(graph):
        for n in sorted(graph[m]):
            if floor_of(n) > floor_of(m):
                found.append(f"{m} (floor '{FLOORS[floor_of(m)][0]}') imports {n} (floor '{FLOORS[floor_of(n)][0]}')")
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (its nodes, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state and (cycle := visit(n)):
                return cycle
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (cycle := visit(m)):
            return cycle
    return None


def folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Imports between folders: a package is one node, each top-level module another."""
    folders: dict[str, set[str]] = {}
    for m, imported in graph.items():
        folders.setdefault(folder_of(m), set()).update(folder_of(n) for n in imported if folder_of(n) != folder_of(m))
    return folders


GRAPH = {m: imports_of(m) for m in MODULES}


def test_every_package_of_the_core_is_on_a_floor():
    for m in MODULES:
        floor_of(m)


def test_no_module_imports_a_module_of_a_higher_floor():
    upward = upward_imports(GRAPH)
    assert not upward, "; ".join(upward) + ": move what the lower module needs down to its floor (or lower)"


def test_no_import_cycles_among_core_modules():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_cycles_between_folders():
    cycle = find_cycle(folder_graph(GRAPH))
    assert cycle is None, "import cycle between folders: " + " -> ".join(cycle)


def test_api_and_what_it_imports_are_on_the_ground_floor():
    reached, todo = set(), ["vpeval.api"]
    while todo:
        m = todo.pop()
        if m not in reached:
            reached.add(m)
            todo.extend(GRAPH[m])
    assert all(floor_of(m) == 0 for m in reached), sorted(m for m in reached if floor_of(m))


def test_importing_api_loads_only_ground_floor_modules():
    code = "import json, sys, vpeval.api; print(json.dumps(sorted(m for m in sys.modules if m.startswith('vpeval'))))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert {m for m in loaded if m in MODULES and floor_of(m) > 0} == set(), loaded


def test_the_rules_catch_an_upward_import_and_a_cycle_between_folders():
    """Imports like those that ran back up before the ground floor was laid, and the report <-> run loop."""
    graph = {m: set(imported) for m, imported in GRAPH.items()}
    graph["vpeval.api"].add("vpeval.run.runner")  # api.py once imported vpeval.run.executor
    graph["vpeval.types"].add("vpeval.data.kaldi")  # types.py once imported vpeval.data.audio
    graph["vpeval.config"].add("vpeval.report.writer")  # config.py once imported vpeval.report.spec
    graph["vpeval.config_checks"].add("vpeval.config")  # its types, under TYPE_CHECKING, before vpeval.schema
    assert upward_imports(graph) == [
        "vpeval.api (floor 'ground') imports vpeval.run.runner (floor 'run')",
        "vpeval.config (floor 'plugin registry and experiment') imports vpeval.report.writer (floor 'report')",
        "vpeval.config_checks (floor 'ground') imports vpeval.config (floor 'plugin registry and experiment')",
        "vpeval.types (floor 'ground') imports vpeval.data.kaldi (floor 'data readers')",
    ]
    loop = {m: set(imported) for m, imported in GRAPH.items()}
    loop["vpeval.report.figures"].add("vpeval.run.cache")  # report/ once imported run.cache and run.names
    assert find_cycle(folder_graph(loop)) == ["vpeval.report", "vpeval.run", "vpeval.report"]
    assert find_cycle(loop) is None  # no cycle among the modules themselves: only the folder rule sees it


def test_the_walk_sees_lazy_relative_dynamic_and_type_checking_imports():
    """Imports inside functions are where the old api -> plugins cycle hid, and TYPE_CHECKING ones are where
    build.py and config_checks.py once reached up to config.py."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from vpeval.config import Experiment\n"
        "def get():\n    from vpeval.plugins import get_plugin_manager\n"
        "def local():\n    from .errors import ConfigError\n"
        "def dynamic():\n    importlib.import_module('vpeval.builtin.plugin')\n"
    )
    assert imports_of("vpeval.api", source) == {
        "vpeval.config",
        "vpeval.plugins",
        "vpeval.errors",
        "vpeval.builtin.plugin",
    }
