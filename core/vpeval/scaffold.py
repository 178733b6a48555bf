"""`vpeval new-plugin`: a complete, installable plugin package that passes its contract tests."""

from __future__ import annotations

import re
import string
from importlib import resources
from pathlib import Path

from vpeval import __version__
from vpeval.api import KINDS
from vpeval.errors import UserError
from vpeval.hookspecs import HOOK_KINDS

BASES = {kind: cls.__name__ for kind, cls in KINDS.items()}
HOOKS = {kind: hook for hook, kind in HOOK_KINDS.items()}
CONTRACTS = {kind: f"{base}Contract" for kind, base in BASES.items()} | {
    "encoder": "EncoderContract",
    "corpus": "CorpusContract",
}
# The package's files, each written from a template in vpeval/templates/new-plugin with string.Template.
TEMPLATES = resources.files("vpeval") / "templates" / "new-plugin"


def create_plugin(kind: str, name: str, directory: Path) -> Path:
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise UserError(f"Plugin name '{name}' must be lower-case letters, digits and dashes, starting with a letter.")
    package = "vpeval_" + name.replace("-", "_")
    root = Path(directory) / name
    if root.exists() and any(root.iterdir()):
        raise UserError(f"{root} already exists and is not empty; choose another --dir or name.")
    values = {
        "name": name,
        "kind": kind,
        "package": package,
        "class_name": "".join(part.capitalize() for part in name.split("-")) + BASES[kind],
        "hook": HOOKS[kind],
        "contract": CONTRACTS[kind],
        "requires": compatible_range(__version__),
        "usage": _yaml_use(kind, name),
    }
    files = {
        "pyproject.toml": "pyproject.toml",
        "README.md": "README.md",
        f"{package}/__init__.py": "__init__.py",
        f"{package}/plugin.py": "plugin.py",
        f"{package}/method.py": f"method-{kind}.py",
        f"tests/test_{package}.py": "test-corpus.py" if kind == "corpus" else "test.py",
    }
    for target, template in files.items():
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        text = (TEMPLATES / f"{template}.tmpl").read_text(encoding="utf-8")
        path.write_text(string.Template(text).substitute(values), encoding="utf-8")
    return root


def compatible_range(version: str) -> str:
    """The vpeval versions a plugin written against `version` can expect to work with: the same minor
    line while vpeval is 0.x (a minor release may break plugins), else the same major line."""
    major, minor = (int(part) for part in version.split(".")[:2])
    upper = f"{major}.{minor + 1}" if major == 0 else f"{major + 1}"
    return f">={major}.{minor},<{upper}"


# How the README's experiment snippet names a plugin of each kind ($name: the plugin's name).
USAGE = {
    "anonymizer": "anonymizers: [{use: $name, params: {strength: 0.5}}]",
    "attacker": "attackers: [{use: $name, train_on: original}]",
    "frontend": "attackers: [{use: token-probe, frontend: {use: $name}}]",
    "metric": "metrics: [$name]",
    "corpus": "data: {corpus: {use: $name, params: {root: /path/to/speech}}}",
    "executor": "executor: {use: $name}",
    "report": "# installed report plugins are asked by `vpeval report RUNS --format md`: $name",
}
HELPER_USAGE = "# a helper plugin: pass `$name` where a plugin parameter names a $kind (e.g. WER's asr)"


def _yaml_use(kind: str, name: str) -> str:
    return string.Template(USAGE.get(kind, HELPER_USAGE)).substitute(name=name, kind=kind)
