"""The repository's distributions read from their pyproject.toml files, and what their modules import.

Shared by tests/test_packaging.py and tests/test_plugin_independence.py.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Distribution:
    name: str
    folder: Path
    packages: set[str]  # top-level import names it defines
    entry_points: bool  # registers any entry point (a plugin) or none (a library)
    requirements: list[Requirement]  # dependencies and optional dependencies
    pyproject: dict


def canonical(name: str) -> str:
    """PEP 503 name: 'Praat_Parselmouth' and 'praat-parselmouth' are one distribution."""
    return "-".join(name.replace("_", "-").replace(".", "-").lower().split("-"))


def read_distribution(pyproject: Path) -> Distribution:
    data = tomllib.loads(pyproject.read_text())
    project = data["project"]
    folder = pyproject.parent
    # Folders of Python modules next to pyproject.toml (namespace packages too), tests and examples aside.
    packages = {
        p.name for p in folder.iterdir() if p.is_dir() and p.name not in ("tests", "examples") and any(p.glob("*.py"))
    }
    requirements = [Requirement(r) for r in project.get("dependencies", [])]
    for extra in project.get("optional-dependencies", {}).values():
        requirements += [Requirement(r) for r in extra]
    return Distribution(
        name=project["name"],
        folder=folder,
        packages=packages,
        entry_points=bool(project.get("entry-points")),
        requirements=requirements,
        pyproject=data,
    )


def plugin_distributions(root: Path = ROOT) -> list[Distribution]:
    """Every distribution under plugins/ and lib/ (plugins and the libraries they share), in path order."""
    return [
        read_distribution(p) for folder in ("lib", "plugins") for p in sorted((root / folder).rglob("pyproject.toml"))
    ]


def core_distribution(root: Path = ROOT) -> Distribution:
    return read_distribution(root / "pyproject.toml")


def modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if ".egg-info" not in str(p) and "build" not in p.parts)


def imported_top_levels(path: Path) -> dict[str, int]:
    """Top-level names of the absolute imports in a module (also inside functions), with a line each."""
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            found.setdefault(name.split(".")[0], node.lineno)
    return found
