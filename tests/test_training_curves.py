"""Training curves in the report and the under-training alarm (vpeval.report.training): an attacker whose own
record says it stopped early (validation EER, else loss, still falling at the last epoch; a validation EER at
chance level) is marked where it reaches the worst case; a perfect one (validation EER 0) never is."""

from __future__ import annotations

import json
import types

import pytest
from pydantic import Field

from vpeval import hookimpl
from vpeval.config import load_experiment_text
from vpeval.report.training import curve_entries, training_doubt, training_markdown, under_trained
from vpeval.report.worst_case import worst_case_tables
from vpeval.run.runner import Runner


def epochs(values, stage=None, losses=None):
    """Validation EERs given in % (as read), recorded as the fraction attackers report."""
    losses = losses or [1.0] * len(values)
    return [
        {"epoch": i + 1, "loss": loss, "validation_eer": None if v is None else v / 100, "stage": stage}
        for i, (v, loss) in enumerate(zip(values, losses))
    ]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([30, 25, 20, 15], True),  # still falling
        ([30, 20, 15, 15.1], False),  # turned up at the end
        ([30, 20, 16, 16], False),  # flat
        ([20.0, 19.9, 19.85, 19.8], False),  # falling by under 2 % of its value: converged
        ([30, 15, 10, 9.9, 10.1, 9.8], False),  # a last dip after a rise is noise around convergence
        ([30, 25], True),  # two epochs, the second far below the first: stopped while learning
        ([30, 10, 0.0], False),  # EER 0: a perfect attacker is never flagged
        ([49, 48, 48.5], True),  # chance level: a verifier that learned nothing
        ([None, None, None], False),  # no validation and a flat loss
    ],
)
def test_the_rule(values, expected):
    assert under_trained(epochs(values)) is expected


def test_the_issues_three_attackers():
    """Issue 37: a 2-epoch attacker is flagged, a converged one is not, one that reaches EER 0 is not."""
    assert (
        training_doubt(epochs([40, 22]))
        == "its validation EER was still falling at its last epoch (40.00 % -> 22.00 %)"
    )
    assert training_doubt(epochs([40, 22, 15, 14.2, 14.3, 14.25])) == ""
    assert training_doubt(epochs([40, 12, 3, 0.0])) == ""


def test_without_validation_the_loss_decides():
    assert training_doubt(epochs([None, None], losses=[2.0, 1.2])) == (
        "its training loss was still falling at its last epoch (2 -> 1.2)"
    )
    assert not under_trained(epochs([None] * 4, losses=[2.0, 1.0, 0.9, 0.899]))


def test_a_staged_curve_is_judged_on_its_last_stage():
    staged = epochs([40, 30, 20], "I") + epochs([25, 24, 24.5], "II")
    assert not under_trained(staged)
    assert under_trained(epochs([25, 24, 24.5], "I") + epochs([40, 30, 20], "II"))


def test_the_worst_case_marks_an_under_trained_attacker_for_its_systems_only():
    rows = [
        {"metric": "eer", "metric_plugin": "eer", "anonymizer": a, "attacker": "net", "scenario": "anonymized",
         "protocol": "A-A", "n": 1, "gender": "all", "value": 10.0, "unit": "%", "details": {}}
        for a in ("x", "y")
    ]  # fmt: skip
    tables = worst_case_tables(rows, marks={("net", "x")})
    assert "net †" in tables[0] and "may be under-trained, so the EER may overstate privacy" in tables[0]
    assert "†" not in tables[1]
    assert all("†" in t for t in worst_case_tables(rows, marks={("net", None)}))  # trained on original speech


def test_the_section_says_when_there_is_no_validation():
    (text,) = training_markdown(curve_entries({("net", None): epochs([None, None])}))
    assert "net: no validation EER was recorded, so convergence is judged on the training loss alone." in text


def test_the_curve_shows_the_validation_eer_in_percent():
    (text,) = training_markdown(curve_entries({("net", None): epochs([30, 20, 21])}))
    assert "| attacker | trained on | epochs | loss | validation EER [%] |" in text
    assert "| net | original | 1-3 | 1, 1, 1 | 30.00, 20.00, 21.00 |" in text


def test_one_table_holds_every_curve_and_bolds_the_kept_epoch():
    """Issue 37, item 5: the curves of all trained attackers in one table (a row each, a row per stage), every
    epoch's value kept; the kept epoch in bold (its loss where it recorded no validation EER)."""
    kept = epochs([30, 20, 21])
    kept[1]["selected"] = True
    no_validation = epochs([None, None], stage="II", losses=[2.0, 1.5])
    no_validation[1]["selected"] = True
    curves = {("net", None): kept, ("net", "x"): epochs([40, 35], "I") + no_validation}
    (text,) = training_markdown(curve_entries(curves))
    table = [line for line in text.splitlines() if line.startswith("| ")]
    assert table[0] == "| attacker | trained on | stage | epochs | loss | validation EER [%] |"
    assert table[1:] == [
        "| net | original |  | 1-3 | 1, 1, 1 | 30.00, **20.00**, 21.00 |",
        "| net | x | I | 1-2 | 1, 1 | 40.00, 35.00 |",
        "| net | x | II | 1-2 | 2, **1.5** |  |",
    ]


def _curve_attacker(fakes):
    class CurvedSpectrum(fakes.FakeSpectrum):
        """fake-spectrum reporting a training curve."""

        name = "curved-spectrum"

        class Params(fakes.FakeSpectrum.Params):
            curve: list[float] = Field(default_factory=list)

        def training_curve(self):
            return epochs(self.params.curve)

    return CurvedSpectrum


EXPERIMENT = """\
name: curves
seed: 1
data:
  corpus: {use: fake-corpus, params: {speakers: 8, utterances: 4}}
anonymizers: [{use: fake-shift}]
attackers:
  - {use: curved-spectrum, label: still-learning, train_on: anonymized, params: {curve: [30, 25, 20, 15]}}
  - {use: curved-spectrum, label: converged, params: {curve: [30, 20, 15, 15]}}
protocols: [O-A, A-A]
metrics: [fake-eer]
"""


def test_a_run_reports_curves_and_marks_the_attacker_still_learning(fake_plugins, tmp_path):
    from vpeval.plugins import get_plugin_manager

    module = types.ModuleType("curves_module")

    def register_attackers(register):
        register(_curve_attacker(fake_plugins))

    module.register_attackers = hookimpl(register_attackers)
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-curves", "1.0", name="vpeval-curves")
    try:
        experiment = load_experiment_text(EXPERIMENT, "curves.yaml")
        result = Runner(experiment, cache_root=tmp_path / "c", output=tmp_path / "r", quiet=True).run()
    finally:
        manager.unregister_module(module)
    payload = json.loads((result.folder / "results.json").read_text())
    flags = {(e["attacker"], e["trained_on"]): e["under_trained"] for e in payload["training"]}
    assert flags == {("still-learning", "fake-shift"): True, ("converged", None): False}
    report = (result.folder / "report.md").read_text()
    assert "## Training curves" in report and "| still-learning | fake-shift | 1-" in report
    assert "**† still-learning may be under-trained" in report
