"""Issue 37, item 7: a `vpeval new-plugin` package installs into a fresh venv and its contract test passes there.

tests/test_cli.py installs the scaffolded packages with --no-deps into a --target of the test environment,
which already holds every dependency; here nothing is borrowed: a new venv without system site packages gets
vpeval from this checkout and the packages with the dependencies they declare (from PyPI or pip's cache), so a
dependency the scaffold forgets to declare fails the import or the test. Every kind, one pip install.
"""

import os
import re
import shutil
import subprocess
import venv
from pathlib import Path

import pytest

from vpeval.api import KINDS
from vpeval.scaffold import create_plugin

ROOT = Path(__file__).resolve().parent.parent


def core_source(folder: Path) -> Path:
    """The core's build inputs copied out of the checkout, so pip's in-tree build writes nothing into it."""
    shutil.copytree(ROOT / "core", folder / "core", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, folder / name)
    return folder


@pytest.mark.slow
def test_every_kind_of_scaffold_passes_its_contract_test_in_a_fresh_venv(tmp_path):
    names = {kind: f"fresh{kind}" for kind in KINDS}
    for kind, name in names.items():
        create_plugin(kind, name, tmp_path / "src")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    isolated = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    packages = [str(tmp_path / "src" / n) for n in names.values()]
    install = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "pytest>=8"]
    subprocess.run(install + [str(core_source(tmp_path / "vpeval-core"))] + packages, env=isolated, check=True)

    # Nothing of the test environment leaks in: this venv's vpeval is the copy, its site-packages its own.
    where = subprocess.run(
        [python, "-c", "import sys, vpeval; print(vpeval.__file__); print(sys.flags.no_site, sys.path)"],
        env=isolated,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert str(env_dir) in where.splitlines()[0] and str(ROOT) not in where, where
    listed = subprocess.run(
        [python, "-m", "vpeval.cli", "plugins", "--json"], env=isolated, capture_output=True, text=True, cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    for name in names.values():
        assert f'"vpeval-{name}"' in listed.stdout, name

    tests = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *[f"{p}/tests" for p in packages]],
        env=isolated,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    passed = re.search(r"(\d+) passed", tests.stdout)
    assert passed and int(passed[1]) >= len(names), tests.stdout[-2000:]  # every kind's contract ran
