"""The `paper` report plugin as the core finds it: through the `vpeval` entry point, answering for the
experiment's `report:` section, the run's figure kinds and `vpeval report --format`; and what the core does
when no report plugin is installed."""

import pytest

from vpeval.api import ReportSections
from vpeval.errors import PluginError
from vpeval.registry import get_plugin_manager
from vpeval.report import extensions
from vpeval.report_spec import ReportSpec
from vpeval_paper_report.report import PaperReport


def rows():
    """EER rows of two attackers against one anonymizer, O-A and A-A, pooled genders."""
    values = {("weak", "O-A"): 30.0, ("weak", "A-A"): 25.0, ("strong", "O-A"): 20.0, ("strong", "A-A"): 10.0}
    return [
        {"metric": "eer", "value": v, "unit": "%", "anonymizer": "shift", "attacker": attacker, "scenario": "s",
         "protocol": protocol, "n": 1, "gender": "all", "metric_plugin": "eer", "details": {}}
        for (attacker, protocol), v in values.items()
    ]  # fmt: skip


def caption(**what):
    return f"Made by {', '.join(sorted(set(what['attackers'])))}."


SPEC = ReportSpec.model_validate(
    {
        "tables": [{"title": "Table I", "rows": ["attacker"], "columns": ["protocol"]}],
        "findings": [
            {"claim": "A-A is easier to attack", "left": {"protocol": "A-A"}, "op": "<", "right": {"protocol": "O-A"}}
        ],
    }
)


def test_the_core_finds_the_plugin_through_its_entry_point():
    manager = get_plugin_manager()
    assert manager.get("report", "paper") is PaperReport
    assert any(isinstance(p, PaperReport) for p in extensions.report_plugins())


def test_the_declared_section_becomes_tables_and_verdicts(tmp_path):
    sections = extensions.declared_sections(SPEC, rows(), tmp_path, caption)
    (table,) = sections.tables
    assert table.startswith("### Table I [%]\n\n| attacker | O-A | A-A |")
    # Rows are attackers: the strongest one (lowest EER) is marked, as the worst case for privacy.
    assert "| strong | **20.00** | **10.00** |" in table and "| weak | 30.00 | 25.00 |" in table
    assert "\n\nBold marks the strongest attacker (lowest eer): the worst case for privacy, per column.\n" in table
    assert table.endswith("Made by strong, weak.")
    (verdict,) = sections.findings
    assert verdict["verdict"] == "HOLDS" and verdict["groups"][0]["left"] == pytest.approx(17.5)
    assert sections.findings_markdown[0].startswith("**A-A is easier to attack**: HOLDS.")


def test_without_a_report_plugin_the_report_says_so_and_the_table_command_stops(monkeypatch, tmp_path):
    monkeypatch.setattr(extensions, "report_plugins", lambda: [])
    sections = extensions.declared_sections(SPEC, rows(), tmp_path, caption)
    assert sections.tables == sections.findings == [] and "no report plugin is installed" in sections.notes[0]
    assert extensions.declared_sections(None, rows(), tmp_path, caption) == ReportSections()
    with pytest.raises(PluginError, match="needs a report plugin that draws tables, and none is installed"):
        extensions.plugin_table([tmp_path], "latex", {})


def test_rows_that_name_their_protocol_in_details_get_a_column_each():
    """Identification rows carry protocol '' and details.protocol; before, the three protocols shared one cell
    and the last row written was the only one shown."""
    from vpeval_paper_report.tables import build_table

    rows = [
        {"anonymizer": "B2", "attacker": "ge2e", "scenario": "original", "protocol": "", "n": 1, "metric": "top-1",
         "metric_plugin": "identification", "gender": "all", "value": value, "unit": "%", "details": {"protocol": p}}
        for p, value in (("O-O", 99.0), ("O-A", 27.5), ("A-A", 30.0))
    ]  # fmt: skip
    table = build_table(rows, "top-1", ["attacker"], ["protocol"])
    assert table.col_keys == [("O-O",), ("O-A",), ("A-A",)]
    assert [table.cells[(("ge2e",), c)]["value"] for c in table.col_keys] == [99.0, 27.5, 30.0]


def test_a_declared_table_takes_a_speech_metrics_pooled_row_not_its_rows_per_set(tmp_path):
    """uar with spk2fold files (VPC's IEMOCAP_dev / IEMOCAP_test) adds a row per folder after the pooled one,
    details.dataset and .class naming it; a table that does not ask for datasets shows the pooled value (before,
    the three rows shared one cell and the table was not filled)."""
    spec = ReportSpec.model_validate(
        {"tables": [{"title": "UAR", "metric": "uar", "rows": ["anonymizer"], "columns": ["gender"]}]}
    )
    rows = [
        {"metric": "uar", "value": value, "unit": "%", "anonymizer": anonymizer, "gender": "all",
         "metric_plugin": "uar", "details": {"dataset": dataset, "class": dataset} if dataset else {}}
        for anonymizer, base in (("B1", 40.0), ("B2", 50.0))
        for dataset, value in ((None, base), ("IEMOCAP_dev", base + 1), ("IEMOCAP_test", base - 1))
    ]  # fmt: skip
    (table,) = extensions.declared_sections(spec, rows, tmp_path, lambda **what: "").tables
    assert "Not filled" not in table
    assert "| B1 | 40.00 |" in table and "| B2 | **50.00** |" in table
    assert "41.00" not in table and "39.00" not in table
