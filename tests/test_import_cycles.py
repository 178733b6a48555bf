"""No import cycle among the project's own modules: the core (vpeval), every plugin package and every lib/
package, found with grimp's import graph rather than a walk of our own.

Every import counts: at module level, inside functions and under TYPE_CHECKING, because a loop hidden by
any of them is still a loop in the design. Package faces (__init__.py) are left out, as in the pre-commit
hook (shared/hooks/import_cycles.py): `from vpeval import hookimpl` ties a module to the package's face,
not to every module the face imports.
"""

from __future__ import annotations

import functools
import sys
import textwrap
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def own_packages() -> dict[str, Path]:
    """The packages of this repository by name, with the folder that holds each: vpeval and every
    plugins/<kind>/<name>/vpeval_* and lib/<name>/vpeval_*."""
    folders = [ROOT / "core" / "vpeval", *ROOT.glob("plugins/*/*/vpeval_*"), *ROOT.glob("lib/*/vpeval_*")]
    return {folder.name: folder.parent for folder in sorted(folders) if (folder / "__init__.py").is_file()}


def module_graph(packages: dict[str, Path]) -> grimp.ImportGraph:
    """The packages' import graph, every import included, the imports of and to package faces removed.

    grimp finds each package in its folder here, installed or not: the graph is of the source tree."""
    saved = list(sys.path)
    sys.path[:0] = sorted({str(folder) for folder in packages.values()})
    try:
        graph = grimp.build_graph(*packages, cache_dir=None, exclude_type_checking_imports=False)
    finally:
        sys.path[:] = saved
    for face in [m for m in graph.modules if graph.find_children(m)]:
        for other in graph.find_modules_that_directly_import(face):
            graph.remove_import(importer=other, imported=face)
        for other in graph.find_modules_directly_imported_by(face):
            graph.remove_import(importer=face, imported=other)
    return graph


def cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One shortest cycle through each direct import that has a way back, each loop of modules once."""
    found: dict[frozenset[str], tuple[str, ...]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer) - {importer}):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back:
                found.setdefault(frozenset(back), (importer, *back))
    return sorted(found.values())


@functools.cache
def project_cycles() -> list[tuple[str, ...]]:
    return cycles(module_graph(own_packages()))


def test_every_plugin_and_library_package_is_in_the_graph():
    packages = own_packages()
    assert "vpeval" in packages and len(packages) > 20, packages
    modules = module_graph(packages).modules
    assert {"vpeval.config", "vpeval_spinv.attacker", "vpeval_torch.fbank"} <= modules


def test_no_import_cycle_in_the_core_plugins_or_libraries():
    loops = project_cycles()
    assert not loops, "import cycles (untie each: what both sides need moves to a module both import): " + "; ".join(
        " -> ".join(loop) for loop in loops
    )


def test_the_check_sees_type_checking_and_function_local_loops_but_not_package_faces(tmp_path):
    package = tmp_path / "cyclesample"
    package.mkdir()
    files = {
        "__init__.py": "from cyclesample.top import Top\n",  # the face imports a module that imports the face
        "top.py": "from cyclesample import Top as _\n\nclass Top: ...\n",
        "typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclesample.top_level import A\n",
        "top_level.py": "import cyclesample.typed\n",
        "lazy.py": "def f():\n    from cyclesample.eager import g\n",
        "eager.py": "from cyclesample.lazy import f\n\ndef g(): ...\n",
        "leaf.py": "import cyclesample.eager\n",
    }
    for name, text in files.items():
        (package / name).write_text(textwrap.dedent(text), encoding="utf-8")
    assert cycles(module_graph({"cyclesample": tmp_path})) == [
        ("cyclesample.eager", "cyclesample.lazy", "cyclesample.eager"),
        ("cyclesample.top_level", "cyclesample.typed", "cyclesample.top_level"),
    ]
