"""experiments/paper-scale/: each file reads with its required variables, and what stops it on a machine
without the data and models is the path check alone: one sentence per missing file or folder, each naming
it, every variable's path among them. Nothing is built from data or run here.

The other shipped-experiment tests glob experiments/*.yaml, so these files (in a subfolder) are checked
only here: they need data that no test machine has.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from vpeval import config_checks
from vpeval.api import PluginContext
from vpeval.build import build_resolved
from vpeval.config import MAX_ERROR_LINES, load_experiment
from vpeval.errors import ConfigError
from vpeval.plugins import get_plugin_manager

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "experiments" / "paper-scale").glob("*.yaml"))
PAPERS = ("seed000", "seed001", "seed002", "seed003")


def required(path: Path, where: Path) -> dict[str, str]:
    """A path under `where` for each variable the file needs from the command line (nothing created)."""
    declared = yaml.safe_load(path.read_text())["variables"]
    return {name: str(where / name.lower()) for name, default in declared.items() if default is None}


def test_every_paper_has_its_files():
    assert sorted({p.name.split("-")[0] for p in FILES}) == list(PAPERS)


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_the_header_says_what_each_variable_holds(path):
    header = "\n".join(line for line in path.read_text().splitlines() if line.startswith("#"))
    for name in required(path, Path("/x")):
        assert f"#   {name} " in header, name
    assert "What the paper ran" in header and "Stand-ins that remain" in header


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_only_missing_paths_stop_it(path, tmp_path):
    """Every error names a path of a variable; every variable's path is named; no sentence twice."""
    variables = required(path, tmp_path)
    with pytest.raises(ConfigError) as raised:
        load_experiment(path, variables=variables)
    lines = str(raised.value).splitlines()
    prepare = yaml.safe_load(path.read_text()).get("prepare")
    if prepare:  # validate says how to make the inputs made outside vpeval, after the missing paths
        sentence = f"(prepare): this file's inputs are made outside vpeval: {prepare}"
        said = [line for line in lines if line.endswith(sentence)]
        assert len(said) == 1, lines
        lines = [line for line in lines if line not in said]
    assert len(lines) <= MAX_ERROR_LINES, "some errors are cut off: too many sentences"
    for line in lines:
        assert any(value in line for value in variables.values()), line
    for name, value in variables.items():
        assert any(value in line for line in lines), f"no sentence names {name}'s path {value}"
    sentences = [line.split("): ", 1)[-1] for line in lines if "trial_list" not in line]
    assert len(sentences) == len(set(sentences)), "a missing path is reported twice"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_without_the_path_check_every_plugin_builds(path, tmp_path, monkeypatch):
    """With the path check off (and the variables' paths present as files, for checks that read a file
    name such as spinv's trial list), the file resolves and each plugin it names is built."""
    monkeypatch.setattr(
        config_checks, "CHECKS", [c for c in config_checks.CHECKS if c is not config_checks.paths_exist]
    )
    variables = required(path, tmp_path)
    for value in variables.values():
        Path(value).touch()
    exp = load_experiment(path, variables=variables)
    assert exp.experiment.device == "auto"
    manager = get_plugin_manager()
    plugins = [exp.corpus, *(s for a in exp.anonymizers for s in a.steps), *(a.plugin for a in exp.attackers)]
    plugins += [a.frontend for a in exp.attackers if a.frontend is not None] + list(exp.metrics)
    for plugin in plugins:
        instance = build_resolved(manager, plugin, PluginContext(work_dir=tmp_path / "work" / plugin.use))
        assert instance.params.model_dump(mode="json") == plugin.params
