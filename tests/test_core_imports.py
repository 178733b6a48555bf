"""The core's import graph: vpeval.api is a leaf plugins can import cheaply, and no core modules import
each other in a cycle (lazy imports inside functions included, since they hide cycles)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import vpeval

CORE = Path(vpeval.__file__).parent
# Modules that import nothing from vpeval but each other: what vpeval.api may import.
LEAVES = {"vpeval", "vpeval.hookspecs", "vpeval.types", "vpeval.errors", "vpeval.settings",
          "vpeval.data", "vpeval.data.audio", "vpeval.safepath", "vpeval.run", "vpeval.run.executor"}


def module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in CORE.rglob("*.py")}


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def imports_of(name: str, source: str | None = None) -> set[str]:
    """Core modules that `name` imports anywhere (top level or inside functions), TYPE_CHECKING aside."""
    tree = ast.parse(source if source is not None else MODULES[name].read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args:
            if isinstance(node.args[0], ast.Constant):
                found.add(node.args[0].value)
    return {m for m in found if m in MODULES and m != name}


def test_api_imports_only_leaf_modules():
    assert imports_of("vpeval.api") <= LEAVES, imports_of("vpeval.api") - LEAVES
    for leaf in LEAVES:
        assert imports_of(leaf) <= LEAVES, f"{leaf} imports {imports_of(leaf) - LEAVES}: it is no longer a leaf"


def test_importing_api_loads_no_other_core_module():
    code = "import json, sys, vpeval.api; print(json.dumps(sorted(m for m in sys.modules if m.startswith('vpeval'))))"
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert set(loaded) <= LEAVES | {"vpeval.api"}, set(loaded) - LEAVES


def test_no_import_cycles_among_core_modules():
    graph = {m: imports_of(m) for m in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_the_walk_sees_lazy_relative_and_dynamic_imports_but_not_type_checking_ones():
    """Imports inside functions are where the old api -> plugins cycle hid."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from vpeval.config import Experiment\n"
        "def get():\n    from vpeval.plugins import get_plugin_manager\n"
        "def local():\n    from .errors import ConfigError\n"
        "def dynamic():\n    importlib.import_module('vpeval.builtins')\n"
    )
    assert imports_of("vpeval.api", source) == {"vpeval.plugins", "vpeval.errors", "vpeval.builtins"}
