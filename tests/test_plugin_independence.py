"""No plugin package imports another plugin package.

A plugin reaches another plugin through the core (`context.get(kind, name, params)`); code that several
plugins share lives in the core or in a library distribution that registers no entry point (such as
lib/prosody). Otherwise installing one plugin drags in another one's dependencies.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from distributions import Distribution, imported_top_levels, modules, plugin_distributions


def cross_plugin_imports(distributions: list[Distribution]) -> list[str]:
    """'path:line imports pkg (plugin dist)' for every module importing another plugin's package."""
    owner = {pkg: d for d in distributions if d.entry_points for pkg in d.packages}
    problems = []
    for dist in distributions:
        for module in modules(dist.folder):
            for name, line in imported_top_levels(module).items():
                other = owner.get(name)
                if other is not None and other.name != dist.name:
                    problems.append(f"{module}:{line} imports {name} ({other.name})")
    return problems


def test_no_plugin_imports_another_plugin():
    distributions = plugin_distributions()
    assert sum(d.entry_points for d in distributions) >= 10  # the walk found the plugins
    problems = cross_plugin_imports(distributions)
    assert not problems, "plugins must reach each other through context.get():\n" + "\n".join(problems)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def pyproject(name: str, package: str, plugin: bool) -> str:
    entry = f'\n[project.entry-points.vpeval]\n{name} = "{package}.plugin"\n' if plugin else ""
    return f'[project]\nname = "{name}"\nversion = "0.1.0"\n{entry}'


def test_the_check_finds_a_plugin_importing_a_plugin_and_allows_a_library(tmp_path):
    for name, package, plugin in (
        ("vpeval-a", "vpeval_a", True),
        ("vpeval-b", "vpeval_b", True),
        ("vpeval-lib", "vpeval_lib", False),
    ):
        folder = tmp_path / "plugins" / "kind" / name
        write(folder / "pyproject.toml", pyproject(name, package, plugin))
        write(folder / package / "__init__.py", "")
    write(
        tmp_path / "plugins/kind/vpeval-a/vpeval_a/method.py",
        """\
        import numpy
        import vpeval_lib.features

        def late():
            from vpeval_b.pool import Spec  # inside a function still counts
        """,
    )
    write(tmp_path / "plugins/kind/vpeval-b/tests/test_b.py", "from vpeval_a import method\n")
    problems = cross_plugin_imports(plugin_distributions(tmp_path))
    assert len(problems) == 2
    assert problems[0].endswith("method.py:5 imports vpeval_b (vpeval-b)")
    assert problems[1].endswith("test_b.py:1 imports vpeval_a (vpeval-a)")
