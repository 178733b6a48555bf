"""An experiment's `variables:` (vpeval.variables): `${NAME}` in values, defaults, --var, and one sentence
with file and line for each mistake."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from vpeval.cli import main
from vpeval.config import load_experiment, load_experiment_text
from vpeval.errors import ConfigError
from vpeval.variables import parse_assignments

TEXT = """\
variables:
  ROOT: null
  MANIFEST: ${ROOT}/speech.csv
  SPEAKERS: 6
name: with-variables
data:
  corpus: {use: manifest, params: {path: "${MANIFEST}"}}
attackers: [ge2e]
protocols: [O-O]
"""


@pytest.fixture
def paths_unchecked(monkeypatch):
    """Substitution is what these tests check: the manifest they name need not exist (validate checks it since
    the manifest corpus has missing_paths)."""
    from vpeval import config_checks

    monkeypatch.setattr(
        config_checks, "CHECKS", [c for c in config_checks.CHECKS if c is not config_checks.paths_exist]
    )


def test_values_are_substituted_from_the_command_line_and_defaults(paths_unchecked):
    resolved = load_experiment_text(TEXT, "exp.yaml", variables={"ROOT": "/data/vpc"})
    assert resolved.corpus.params["path"] == "/data/vpc/speech.csv"
    overridden = load_experiment_text(TEXT, "exp.yaml", variables={"ROOT": "/x", "MANIFEST": "/y/m.csv"})
    assert overridden.corpus.params["path"] == "/y/m.csv"


def test_a_required_variable_not_given_names_its_line_and_the_flag():
    with pytest.raises(ConfigError) as err:
        load_experiment_text(TEXT, "exp.yaml")
    assert str(err.value).startswith("exp.yaml, line 2 (variables.ROOT)") and "--var ROOT=VALUE" in str(err.value)


def test_an_undeclared_reference_names_its_line():
    text = TEXT.replace('path: "${MANIFEST}"', 'path: "${MANFEST}"')
    with pytest.raises(ConfigError) as err:
        load_experiment_text(text, "exp.yaml", variables={"ROOT": "/r"})
    assert "exp.yaml, line 7 (data.corpus.params.path)" in str(err.value) and "${MANFEST}" in str(err.value)


def test_a_default_may_only_use_variables_declared_above_it():
    text = TEXT.replace("MANIFEST: ${ROOT}/speech.csv", "MANIFEST: ${LATER}/speech.csv")
    with pytest.raises(ConfigError, match="line 3"):
        load_experiment_text(text, "exp.yaml", variables={"ROOT": "/r"})


def test_a_var_the_file_does_not_declare_is_refused():
    with pytest.raises(ConfigError, match="declares no such variable"):
        load_experiment_text(TEXT, "exp.yaml", variables={"ROOT": "/r", "ROTO": "/s"})
    plain = TEXT.split("name:", 1)[1].replace("${MANIFEST}", "speech.csv")
    with pytest.raises(ConfigError, match="declares no `variables:`"):
        load_experiment_text("name:" + plain, "exp.yaml", variables={"ROOT": "/r"})


def test_a_reference_in_a_file_without_variables_is_refused():
    plain = "name:" + TEXT.split("name:", 1)[1]
    with pytest.raises(ConfigError, match=r"line 3 \(data.corpus.params.path\).*no `variables:` section"):
        load_experiment_text(plain, "exp.yaml")


def test_substitution_never_makes_yaml_structure(paths_unchecked):
    resolved = load_experiment_text(TEXT, "exp.yaml", variables={"ROOT": "a}\n  evil: {use: x"})
    assert resolved.corpus.params["path"] == "a}\n  evil: {use: x/speech.csv"


def test_a_whole_value_takes_a_numeric_defaults_type(paths_unchecked):
    text = TEXT.replace("attackers: [ge2e]", 'attackers: [{use: ecapa, params: {epochs: "${EPOCHS}"}}]')
    text = text.replace("  SPEAKERS: 6", "  EPOCHS: 6")
    assert load_experiment_text(text, "e.yaml", variables={"ROOT": "/r"}).attackers[0].plugin.params["epochs"] == 6
    two = load_experiment_text(text, "e.yaml", variables={"ROOT": "/r", "EPOCHS": "2"})
    assert two.attackers[0].plugin.params["epochs"] == 2
    with pytest.raises(ConfigError, match=r"--var EPOCHS=two: e.yaml, line 4 \(variables.EPOCHS\) declares"):
        load_experiment_text(text, "e.yaml", variables={"ROOT": "/r", "EPOCHS": "two"})


def test_malformed_assignments_are_one_sentence():
    assert parse_assignments(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_assignments(["no-equals"])


def test_validate_takes_var_on_the_command_line(tmp_path):
    (tmp_path / "speech.csv").write_text("path,speaker\n")
    path = tmp_path / "exp.yaml"
    path.write_text(TEXT)
    missing = CliRunner().invoke(main, ["validate", str(path)])
    assert missing.exit_code == 2 and "--var ROOT=VALUE" in missing.output
    ok = CliRunner().invoke(main, ["validate", str(path), "--var", f"ROOT={tmp_path}"])
    assert ok.exit_code == 0, ok.output
    assert load_experiment(path, variables={"ROOT": str(tmp_path)}).corpus.params["path"] == f"{tmp_path}/speech.csv"


MANY = """\
variables:
  ROOT: null                 # the toolkit checkout (data/ and exp/)
  # the submission's suffix, e.g. _mcadams
  SUFFIX: null
  DATA: ${ROOT}/data
  MANIFEST: ${DATA}/speech${SUFFIX}.csv
  SPEAKERS: 6
name: with-variables
data:
  corpus: {use: manifest, params: {path: "${MANIFEST}"}}
attackers: [ge2e]
protocols: [O-O]
"""


def test_every_missing_variable_is_one_line_with_what_the_file_says_it_is(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(MANY)
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    lines = str(err.value).splitlines()
    assert len(lines) == 2  # DATA and MANIFEST follow from them: not reported again
    assert "line 2 (variables.ROOT)" in lines[0] and "(the toolkit checkout (data/ and exp/))" in lines[0]
    assert "line 4 (variables.SUFFIX)" in lines[1] and "(the submission's suffix, e.g. _mcadams)" in lines[1]
    assert all("--var" in line for line in lines)


def test_a_list_default_takes_the_first_path_that_exists_with_a_note(tmp_path, caplog):
    text = TEXT.replace("MANIFEST: ${ROOT}/speech.csv", 'MANIFEST: ["${ROOT}/new.csv", "${ROOT}/old.csv"]')
    (tmp_path / "old.csv").write_text("path,speaker\n")
    resolved = load_experiment_text(text, "exp.yaml", variables={"ROOT": str(tmp_path)})
    assert resolved.corpus.params["path"] == str(tmp_path / "old.csv")
    assert "does not exist" in caplog.text and str(tmp_path / "new.csv") in caplog.text
    (tmp_path / "new.csv").write_text("path,speaker\n")
    caplog.clear()
    resolved = load_experiment_text(text, "exp.yaml", variables={"ROOT": str(tmp_path)})
    assert resolved.corpus.params["path"] == str(tmp_path / "new.csv") and not caplog.text
    (tmp_path / "new.csv").unlink(), (tmp_path / "old.csv").unlink()
    with pytest.raises(ConfigError, match="new.csv does not exist"):  # none exists: the first, for its error
        load_experiment_text(text, "exp.yaml", variables={"ROOT": str(tmp_path)})
