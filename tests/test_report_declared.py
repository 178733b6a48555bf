"""The experiment's `report:` section: declared paper tables, curves and findings, validated at load and
printed in report.md with verdicts that follow from the run's own numbers."""

import json

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval.report_spec import FindingSpec, ReportSpec
from vpeval.run.runner import Runner
from vpeval_paper_report import declared

EXPERIMENT = """\
name: declared-test
seed: 5
data:
  corpus: {use: fake-corpus, params: {speakers: 12, utterances: 6}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 3
  nontarget_trials_per_speaker: 3
anonymizers:
  - {use: fake-shift}
  - {use: fake-shift, label: gentle, params: {low: 1.05, high: 1.1}}
attackers:
  - {use: fake-spectrum, label: narrow, params: {bands: 8}}
  - {use: fake-spectrum, label: wide, params: {bands: 24}}
protocols: [O-O, O-A, A-A]
enroll_utterances: [1, 2]
metrics: [fake-eer]
report:
  # fake-eer reports pooled ("all") values only, so they are the headline ones
  tables:
    - {title: "Table I: EER of both attackers", metric: fake-eer, rows: [attacker], columns: [n, protocol], \
where: {anonymizer: fake-shift}, best: lower}
    - {title: "Table II: one cell per attacker is ambiguous", metric: fake-eer, rows: [attacker], columns: [protocol]}
  curves:
    - {title: "Figure 1: EER against bands", metric: fake-eer, x: {attacker: {narrow: 8, wide: 24}}, xlabel: bands, \
series: anonymizer, where: {n: 1}}
  findings:
    - {claim: "Anonymization raises the EER (O-A above O-O)", metric: fake-eer, left: {protocol: O-A}, op: ">", \
right: {protocol: O-O}, per: [anonymizer]}
    - claim: "More enrollment lowers the EER more in A-A than in O-O"
      metric: fake-eer
      left: {delta: [{n: 1, protocol: A-A}, {n: 2, protocol: A-A}]}
      op: ">"
      right: {delta: [{n: 1, protocol: O-O}, {n: 2, protocol: O-O}]}
    - {claim: "The wide attacker is close to the narrow one", metric: fake-eer, left: {attacker: wide}, op: "~", \
right: {attacker: narrow}, tolerance: 100}
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    import fakes

    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    tmp = tmp_path_factory.mktemp("declared")
    try:
        exp = load_experiment_text(EXPERIMENT, "exp.yaml")
        result = Runner(exp, cache_root=tmp / "cache", output=tmp / "run", quiet=True).run()
    finally:
        manager.unregister_module(fakes)
    return result


def _mean(rows, **where):
    values = [
        r["value"]
        for r in rows
        if r["metric"] == "fake-eer"
        and r.get("gender") == "all"
        and all(str(r.get(k)) == str(v) for k, v in where.items())
    ]
    return sum(values) / len(values)


def test_findings_follow_the_runs_own_numbers(run):
    results = json.loads((run.folder / "results.json").read_text())
    by_claim = {f["claim"]: f for f in results["findings"]}
    raised = by_claim["Anonymization raises the EER (O-A above O-O)"]
    for group in raised["groups"]:
        name = group["group"]["anonymizer"]
        assert group["left"] == pytest.approx(_mean(run.rows, anonymizer=name, protocol="O-A"))
        assert group["right"] == pytest.approx(_mean(run.rows, anonymizer=name, protocol="O-O"))
        assert group["holds"] == (group["left"] > group["right"])
    assert {g["group"]["anonymizer"] for g in raised["groups"]} == {"fake-shift", "gentle"}
    assert raised["verdict"] == ("HOLDS" if all(g["holds"] for g in raised["groups"]) else "DOES NOT HOLD")

    delta = by_claim["More enrollment lowers the EER more in A-A than in O-O"]["groups"][0]
    aa = _mean(run.rows, n=1, protocol="A-A") - _mean(run.rows, n=2, protocol="A-A")
    oo = _mean(run.rows, n=1, protocol="O-O") - _mean(run.rows, n=2, protocol="O-O")
    assert (delta["left"], delta["right"]) == (pytest.approx(aa), pytest.approx(oo))
    assert by_claim["The wide attacker is close to the narrow one"]["verdict"] == "HOLDS"


def test_report_prints_findings_tables_and_the_declared_curve(run):
    report = (run.folder / "report.md").read_text()
    assert report.index("## Findings") < report.index("## Paper tables") < report.index("## Figures")
    assert "**Anonymization raises the EER (O-A above O-O)**: " in report
    table = report.split("### Table I: EER of both attackers")[1].split("###")[0]
    assert "| narrow |" in table and "| wide |" in table and "O-A" in table and "gentle" not in table.split("*Data")[0]
    assert "corpus `fake-corpus`" in table  # what produced it, under the table
    captions = [line for line in report.splitlines() if line.startswith("*Data:")]
    assert len(captions) == len(set(captions)) == 2  # the report's own and Table I's (it names its metric)
    # A table the results cannot fill (several anonymizers per cell) is one sentence, and the run still ends.
    assert "Not filled:" in report.split("### Table II")[1].split("###")[0]
    pytest.importorskip("matplotlib")
    png = run.folder / "figures" / "curve-1__figure-1-eer-against-bands.png"
    assert png.is_file() and "](figures/curve-1__figure-1-eer-against-bands.png)" in report


def test_a_finding_without_values_is_not_measured_and_per_groups_all_must_hold():
    rows = [
        {"metric": "eer", "value": v, "gender": "avg", "anonymizer": a, "attacker": "x", "protocol": p, "n": 1}
        for a, p, v in [("A", "O-O", 5.0), ("A", "A-A", 20.0), ("B", "O-O", 5.0), ("B", "A-A", 4.0)]
    ]
    spec = FindingSpec.model_validate(
        {"claim": "c", "left": {"protocol": "A-A"}, "op": ">", "right": {"protocol": "O-O"}, "per": ["anonymizer"]}
    )
    result = declared.check_finding(spec, rows)
    assert [g.holds for g in result.groups] == [True, False] and result.verdict == "DOES NOT HOLD"
    missing = FindingSpec.model_validate({"claim": "c", "left": {"n": 5}, "op": "<", "right": {"n": 1}})
    assert declared.check_finding(missing, rows).verdict == "NOT MEASURED"
    assert "n/a (no values)" in declared.findings_markdown([declared.check_finding(missing, rows)])[0]
    other = FindingSpec.model_validate({"claim": "c", "metric": "wer", "left": {"n": 1}, "op": "<", "right": {"n": 1}})
    assert declared.check_finding(other, rows).note == "no wer values match; the run's metrics are eer"


@pytest.mark.parametrize(
    "section, expected",
    [
        (
            "findings: [{claim: c, left: {attacker: wdie}, op: '<', right: {attacker: narrow}}]",
            "line 18 (report.findings[0].left.attacker): this experiment has no attacker 'wdie'; did you mean 'wide'?",
        ),
        ("tables: [{title: t, where: {n: 3}}]", "this experiment has no n '3'; use one of: 1, 2."),
        ("findings: [{claim: c, left: {n: 1}, op: '~', right: {n: 2}}]", "needs a tolerance > 0"),
        (
            "tables: [{title: t, rows: [protocol], columns: [protocol]}]",
            "line 18 (report.tables[0]): protocol is in both rows and columns",
        ),
        ("tables: [{title: t, rows: [n, n]}]", "n is named twice"),
        ("curves: [{title: t, x: {attacker: {narrow: 1}}, series: attacker}]", "attacker is both the swept x"),
        ("tables: [{title: t, where: {speaker: x}}]", "report.tables[0].where.speaker"),
    ],
)
def test_report_section_mistakes_are_refused_at_load_with_their_line(section, expected, fake_plugins):
    text = EXPERIMENT.split("report:")[0] + "report:\n  " + section + "\n"
    with pytest.raises(ConfigError) as err:
        load_experiment_text(text, "exp.yaml")
    assert expected in str(err.value)


def test_the_report_section_is_not_part_of_any_cache_key(run, tmp_path, fake_plugins):
    exp = load_experiment_text(EXPERIMENT.replace("Table I:", "Table 1:"), "exp.yaml")
    again = Runner(exp, cache_root=run.folder.parent / "cache", output=tmp_path / "run", quiet=True).run()
    assert not any(again.executed.values()), "every stage came from the cache"
    assert "### Table 1: EER of both attackers" in (again.folder / "report.md").read_text()


def test_spec_defaults_are_the_papers_layout():
    spec = ReportSpec.model_validate({"tables": [{"title": "t"}]})
    assert (
        spec.tables[0].rows == ["attacker"]
        and spec.tables[0].columns == ["protocol"]
        and spec.tables[0].metric == "eer"
    )


def test_values_equal_up_to_summation_order_are_equal_not_larger():
    rows = [
        {"metric": "eer", "value": v, "gender": "avg", "attacker": a, "protocol": "A-A", "n": n}
        for a, n, v in [("x", 1, 6.25), ("y", 1, 0.1 + 0.2), ("y", 2, 6.25 * 2 - 0.1 - 0.2)]
    ]  # y's mean: 6.25 up to rounding
    for op, expected in ((">", False), ("<", False), (">=", True), ("<=", True)):
        spec = FindingSpec.model_validate(
            {"claim": "c", "left": {"attacker": "y"}, "op": op, "right": {"attacker": "x"}}
        )
        assert declared.check_finding(spec, rows).verdict == ("HOLDS" if expected else "DOES NOT HOLD"), op
