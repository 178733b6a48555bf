"""The privacy gate: its O-O EER against the core's (independent) EER, when it fires, and what the core's
report makes of a fired gate (the attacker marked in the worst case and in every privacy table)."""

import numpy as np
import pytest

from vpeval.api import MetricInputs
from vpeval.plugins import plugin_context
from vpeval.report.tables import attack_tables
from vpeval.report.training import upper_bound_reasons
from vpeval.report.worst_case import worst_case_tables
from vpeval.testing.contracts import MetricContract, random_scores
from vpeval_gate.gate import PrivacyGate


def _gate(tmp_path, bound=10.0):
    return PrivacyGate(PrivacyGate.Params(max_original_eer=bound), plugin_context(seed=0, work_dir=tmp_path))


def _brute_eer(scores, targets):
    """Step EER by trying every threshold: (FA + FR) / 2 where |FA - FR| is least (speechbrain's rule)."""
    best = None
    for t in sorted(set(scores.tolist()) | {(a + b) / 2 for a, b in zip(sorted(scores), sorted(scores)[1:])}):
        fr = np.mean(scores[targets] <= t)
        fa = np.mean(scores[~targets] > t)
        if best is None or abs(fa - fr) < best[0]:
            best = (abs(fa - fr), (fa + fr) / 2)
    return 100 * best[1]


@pytest.mark.parametrize("separation", [0.5, 3.0])
def test_value_is_the_o_o_eer_and_the_gate_fires_above_the_bound(tmp_path, separation):
    s = random_scores(seed=1, speakers=8, trials_per_speaker=20, separation=separation)
    (row,) = _gate(tmp_path).compute(MetricInputs(scores=s, attributes={"protocol": "O-O"}))
    assert row.value == pytest.approx(_brute_eer(s.scores, s.targets))
    assert row.details["gate"]["fires"] == (row.value > 10.0)
    assert row.details["gate"]["fires"] == (separation == 0.5)  # weak attacker fires, strong does not
    if row.details["gate"]["fires"]:
        assert "above the bound 10 %" in row.details["gate"]["reason"]


def test_no_row_on_anonymized_protocols(tmp_path):
    assert _gate(tmp_path).compute(MetricInputs(scores=random_scores(), attributes={"protocol": "O-A"})) == []


ROWS = [
    {"metric": "eer", "metric_plugin": "eer", "anonymizer": a, "attacker": at, "scenario": "original",
     "protocol": p, "n": 1, "gender": "all", "value": v, "unit": "%", "details": {}}
    for at, a, p, v in [("weak", "none", "O-O", 41.0), ("weak", "mcadams", "O-A", 30.0),
                        ("strong", "none", "O-O", 5.0), ("strong", "mcadams", "O-A", 35.0)]
]  # fmt: skip


def _gate_row(attacker, fires):
    reason = "failed the privacy gate: its O-O EER 41.0 % is above the bound 10 %" if fires else ""
    return {
        **ROWS[0],
        "metric": "privacy-gate",
        "attacker": attacker,
        "details": {"gate": {"fires": fires, "reason": reason}},
    }


def test_the_report_marks_a_gated_attacker_as_an_upper_bound_and_names_the_gate():
    rows = ROWS + [_gate_row("weak", True), _gate_row("strong", False)]
    marks = upper_bound_reasons([], rows)
    assert set(marks) == {("weak", None)}
    (worst,) = worst_case_tables(rows, marks=marks)
    assert "weak †" in worst and "failed the privacy gate" in worst and "bound 10 %" in worst
    (table,) = attack_tables([r for r in rows if r["metric"] == "eer"], marks=marks)
    assert "| weak † |" in table and "| strong |" in table and "upper bounds on privacy" in table


def test_an_under_trained_attacker_is_marked_too_with_its_own_reason():
    entries = [{"attacker": "strong", "trained_on": None, "under_trained": True, "epochs": [{"epoch": 1}]}]
    marks = upper_bound_reasons(entries, ROWS + [_gate_row("weak", True)])
    assert "under-trained" in marks[("strong", None)] and "privacy gate" in marks[("weak", None)]


class TestPrivacyGateContract(MetricContract):
    plugin_name = "privacy-gate"
