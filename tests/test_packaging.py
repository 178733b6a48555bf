"""Packaging for third parties: pyproject.toml files declare version ranges, requirements.lock pins them.

A third party installs one plugin next to their own torch, so no pyproject.toml pins an exact version;
the README's install keeps exact versions through requirements.lock, which must satisfy every range.
Each distribution declares what its modules import (scripts/check-plugin-install.sh installs one plugin
with only its declared dependencies and runs its contract test).
"""

from __future__ import annotations

import sys
import tomllib
from functools import cache
from importlib import metadata

import pytest
from distributions import (
    ROOT,
    Distribution,
    canonical,
    core_distribution,
    imported_top_levels,
    modules,
    plugin_distributions,
)
from packaging.requirements import Requirement
from packaging.version import Version

import vpeval
from vpeval.scaffold import compatible_range, create_plugin

ALL = [core_distribution(), *plugin_distributions()]
OURS = {canonical(d.name): d for d in ALL}


def locked() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            (spec,) = requirement.specifier
            assert spec.operator == "==", f"requirements.lock: {line} is not an exact pin"
            pins[canonical(requirement.name)] = Version(spec.version)
    return pins


@pytest.mark.parametrize("dist", ALL, ids=lambda d: d.name)
def test_dependencies_are_ranges_with_lower_bounds(dist: Distribution):
    for requirement in dist.requirements:
        operators = {spec.operator for spec in requirement.specifier}
        assert not operators & {"==", "==="}, f"{dist.folder}/pyproject.toml pins {requirement}; declare a range"
        assert operators & {">=", "~=", ">"}, f"{dist.folder}/pyproject.toml: {requirement} needs a lower bound"


@pytest.mark.parametrize("dist", ALL, ids=lambda d: d.name)
def test_our_own_distributions_are_required_at_their_current_version(dist: Distribution):
    for requirement in dist.requirements:
        ours = OURS.get(canonical(requirement.name))
        if ours is not None:
            version = ours.pyproject["project"]["version"]
            assert requirement.specifier.contains(version), f"{dist.name} requires {requirement}, we are at {version}"


# Optional extras the lock leaves out on purpose, with why: install.sh installs the lock, and these are
# heavy stacks a user adds for one model.
UNLOCKED_EXTRAS = {"funasr": "emotion2vec+ (seed 003's emotion indicator) through FunASR, from a local folder"}


def test_the_lock_pins_every_declared_dependency_inside_its_range():
    pins = locked()
    for dist in ALL:
        for requirement in dist.requirements:
            name = canonical(requirement.name)
            if name in OURS or name in UNLOCKED_EXTRAS:
                continue
            assert name in pins, f"requirements.lock lacks {requirement.name}, which {dist.name} requires"
            assert requirement.specifier.contains(pins[name], prereleases=True), (
                f"requirements.lock pins {requirement.name}=={pins[name]}, outside {dist.name}'s range {requirement}"
            )


def test_every_plugin_folder_is_where_install_sh_finds_it():
    # scripts/install.sh installs pyproject.toml files at plugins/<group>/<name>/ (find -mindepth 3 -maxdepth 3).
    for pyproject in (ROOT / "plugins").rglob("pyproject.toml"):
        assert len(pyproject.relative_to(ROOT).parts) == 4, f"{pyproject} is not at plugins/<group>/<name>/"


@cache
def import_name_owners() -> dict[str, set[str]]:
    """Top-level import name -> installed distributions that provide it (compiled modules included)."""
    owners: dict[str, set[str]] = {}
    for name, dists in metadata.packages_distributions().items():
        owners.setdefault(name, set()).update(canonical(d) for d in dists)
    for dist in metadata.distributions():
        name = canonical(dist.metadata["Name"])
        for path in dist.files or []:
            top = path.parts[0].split(".")[0]
            if not path.parts[0].endswith((".dist-info", ".pth")) and top.isidentifier():
                owners.setdefault(top, set()).add(name)
    for dist in ALL:
        for package in dist.packages | ({"vpeval"} if dist.name == "vpeval" else set()):
            owners.setdefault(package, set()).add(canonical(dist.name))
    return owners


def with_their_requirements(names: set[str]) -> set[str]:
    """The names plus what each third-party one requires (one level): pydantic brings pydantic-core.
    Not what vpeval requires: a plugin declares numpy itself even though the core needs it too."""
    out = set(names)
    for name in names - set(OURS):
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        out |= {canonical(Requirement(r).name) for r in requires if "extra ==" not in r}
    return out


def undeclared_imports(dist: Distribution) -> list[str]:
    declared = with_their_requirements({canonical(r.name) for r in dist.requirements})
    # Tests may also use what the core brings and the core's test extra (pytest).
    for_tests = declared | with_their_requirements({canonical(r.name) for r in OURS["vpeval"].requirements})
    # Its own packages, and modules a test imports from its own folder (`from conftest import ...`).
    local = dist.packages | {m.stem for m in modules(dist.folder)}
    problems = []
    for module in modules(dist.folder):
        in_tests = "tests" in module.relative_to(dist.folder).parts
        for name, line in imported_top_levels(module).items():
            if name in sys.stdlib_module_names or name in local or name == "__future__":
                continue
            owners = import_name_owners().get(name, set())
            if not owners and canonical(name) in {canonical(r.name) for r in dist.requirements}:
                continue  # an optional extra that is not installed here (funasr for emotion2vec+): declared
            if not owners & (for_tests if in_tests else declared):
                problems.append(
                    f"{module.relative_to(dist.folder)}:{line} imports {name} "
                    f"(from {', '.join(sorted(owners)) or 'nothing installed'})"
                )
    return problems


@pytest.mark.parametrize("dist", plugin_distributions(), ids=lambda d: d.name)
def test_every_import_is_a_declared_dependency(dist: Distribution):
    problems = undeclared_imports(dist)
    assert not problems, f"{dist.folder.relative_to(ROOT)}/pyproject.toml does not declare:\n" + "\n".join(problems)


def test_the_check_finds_an_undeclared_import(tmp_path):
    folder = tmp_path / "plugins" / "kind" / "demo"
    (folder / "vpeval_demo").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "vpeval-demo"\nversion = "0.1.0"\ndependencies = ["vpeval>=0.1,<0.2", "numpy>=2.0,<3"]\n'
    )
    (folder / "vpeval_demo" / "__init__.py").write_text(
        "import numpy\nimport yaml\n\ndef f():\n    import parselmouth\n"
    )
    (dist,) = plugin_distributions(tmp_path)
    problems = [p.split(" imports ")[1] for p in undeclared_imports(dist)]
    assert problems == ["yaml (from pyyaml)", "parselmouth (from praat-parselmouth)"]


@pytest.mark.parametrize(
    ("version", "expected"), [("0.1.0", ">=0.1,<0.2"), ("0.3.2", ">=0.3,<0.4"), ("1.4.0", ">=1.4,<2")]
)
def test_compatible_range(version, expected):
    assert compatible_range(version) == expected


def test_scaffold_requires_a_range_of_vpeval_that_holds_this_version(tmp_path):
    root = create_plugin("metric", "ranged", tmp_path)
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    (requirement,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "vpeval"]
    assert "==" not in str(requirement.specifier)
    assert requirement.specifier.contains(vpeval.__version__)
    next_release = Version(vpeval.__version__)
    breaking = (
        f"{next_release.major}.{next_release.minor + 1}.0"
        if next_release.major == 0
        else f"{next_release.major + 1}.0.0"
    )
    assert not requirement.specifier.contains(breaking)
