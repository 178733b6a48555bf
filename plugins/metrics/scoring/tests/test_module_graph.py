"""The package's modules import each other in one direction only (no cycle, not even through a lazy import)."""

import ast
from pathlib import Path

import numpy as np

import vpeval_scoring
from vpeval_scoring.pav import pav, pav_blocks
from vpeval_scoring.sorted_trials import SortedTrials

PACKAGE = Path(vpeval_scoring.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every vpeval_scoring module this file imports, at module level or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vpeval_scoring."):
            names.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("vpeval_scoring."))
    return names


def test_no_import_cycle_between_the_modules():
    graph = {p.stem: _imports(p) for p in PACKAGE.glob("*.py")}
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(module) :] + [module]))
        if module in done:
            return
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            visit(imported)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def test_pav_blocks_fits_a_tally_once_and_matches_a_fresh_fit():
    rng = np.random.default_rng(0)
    tally = SortedTrials(rng.normal(size=200), rng.random(200) < 0.3).counts
    for laplace in (False, True):
        first = pav_blocks(tally, laplace)
        assert pav_blocks(tally, laplace) is first
        fresh = pav(tally, laplace)
        np.testing.assert_array_equal(first.first_group, fresh.first_group)
        np.testing.assert_array_equal(first.tar, fresh.tar)
        np.testing.assert_array_equal(first.non, fresh.non)
    assert pav_blocks(tally, True) is not pav_blocks(tally, False)
