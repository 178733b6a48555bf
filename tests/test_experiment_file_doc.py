"""docs/experiment-file.md documents every key an experiment file may hold: a key added to the schema
without a row in its table fails here."""

from pathlib import Path

from vpeval.report_spec import CurveSpec, FindingSpec, ReportSpec, TableSpec
from vpeval.schema import AttackerSpec, DataSpec, Experiment

DOC = (Path(__file__).parents[1] / "docs" / "experiment-file.md").read_text(encoding="utf-8")


def test_every_top_level_and_data_key_has_a_row():
    table_keys = {line.split("|")[1].strip() for line in DOC.splitlines() if line.startswith("| `")}
    documented = {k.strip("` ") for cell in table_keys for k in cell.split(",")}
    wanted = set(Experiment.model_fields) | {"variables"} | {f"data.{k}" for k in DataSpec.model_fields}
    assert not wanted - documented, f"keys without a row in docs/experiment-file.md: {sorted(wanted - documented)}"


def test_every_nested_key_is_named():
    for model in (AttackerSpec, ReportSpec, TableSpec, CurveSpec, FindingSpec):
        missing = [k for k in model.model_fields if k not in ("distribution", "version", "code") and k not in DOC]
        assert not missing, f"{model.__name__} keys not in docs/experiment-file.md: {missing}"
