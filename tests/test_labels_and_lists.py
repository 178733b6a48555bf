"""Names and lists that validated and then broke the results: refused at `vpeval validate`.

`metrics: [eer, eer]` computed twice and gave rows no table can tell apart; a report `metric:` with a
typo printed an empty table after the run; an experiment name or label with a newline, an ANSI escape or
`|` broke report.md's tables and LaTeX rows. Each is now one sentence naming the file, line and field.
"""

from __future__ import annotations

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval_paper_report.tables import build_table, latex_escape, render_latex

HEAD = """\
name: {name}
data:
  corpus: {{use: synth, params: {{preset: tiny}}}}
anonymizers:
  - {anonymizer}
attackers:
  - {attacker}
metrics:
{metrics}
"""


def experiment(name="names", anonymizer="{use: mcadams}", attacker="{use: ge2e}", metrics="  - eer", report=""):
    return HEAD.format(name=name, anonymizer=anonymizer, attacker=attacker, metrics=metrics) + report


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    message = str(info.value)
    assert "Traceback" not in message
    return message


# -- a metric listed twice ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "metrics, words",
    [
        ("  - eer\n  - eer", "repeats metrics[0] (eer)"),
        ("  - {use: eer, label: x}\n  - {use: min-dcf, label: x}", "both labelled 'x'"),
        # the same params once defaults are filled in, under two labels
        ("  - eer\n  - {use: eer, params: {variant: step}}", "computes what metrics[0] (eer) computes"),
    ],
)
def test_a_metric_listed_twice_is_refused(metrics, words):
    message = refused(experiment(metrics=metrics))
    assert "exp.yaml, line 10 (metrics[1]): metric" in message and words in message, message


def test_one_metric_with_two_settings_is_fine():
    exp = load_experiment_text(experiment(metrics="  - eer\n  - {use: eer, params: {variant: rocch}}"), "exp.yaml")
    assert [m.label for m in exp.metrics] == ["eer", "eer(variant=rocch)"]


# -- the report section's metric names -------------------------------------------------------------------

REPORT = """\
report:
  tables:
    - {{title: "Table 1", metric: {metric}}}
"""


def test_a_report_metric_with_a_typo_is_refused():
    message = refused(experiment(report=REPORT.format(metric="eeer")))
    assert (
        "exp.yaml, line 12 (report.tables[0].metric): this experiment has no metric 'eeer'; did you mean 'eer'?"
        in message
    ), message


def test_a_report_metric_no_metric_of_the_experiment_reports_is_refused():
    message = refused(experiment(report=REPORT.format(metric="wer")))
    assert "(report.tables[0].metric): this experiment has no metric 'wer'" in message, message


@pytest.mark.parametrize(
    "metrics, metric", [("  - eer", "eer"), ("  - zebra", "zebra-dece"), ("  - min-dcf", "min-dcf")]
)
def test_report_metrics_the_experiment_reports_are_accepted(metrics, metric):
    """Result names, not only plugin names: zebra reports zebra-dece and zebra-worst-case."""
    load_experiment_text(experiment(metrics=metrics, report=REPORT.format(metric=metric)), "exp.yaml")


def test_finding_and_curve_metrics_are_checked_too():
    report = """\
report:
  curves:
    - {title: c, metric: eer, x: n}
  findings:
    - {claim: c, metric: min_dcf, left: {protocol: O-O}, op: "<", right: {protocol: A-A}}
"""
    message = refused(experiment(report=report))
    assert "(report.findings[0].metric): this experiment has no metric 'min_dcf'" in message, message
    assert "curves" not in message


# -- names and labels that would break tables ----------------------------------------------------------

BREAKING = [
    ('"a\\nb"', "a line break"),
    ('"a\\e[31mred"', "U+001B"),
    ('"a|b"', "'|'"),
    ('"a\\u202eb"', "U+202E"),
    ('"a\\tb"', "U+0009"),
]


@pytest.mark.parametrize("value, words", BREAKING, ids=[v for v, _ in BREAKING])
def test_an_experiment_name_that_breaks_tables_is_refused(value, words):
    message = refused(experiment(name=value))
    assert message.startswith("exp.yaml, line 1 (name): the experiment name") and words in message, message
    assert "\n" not in message


@pytest.mark.parametrize("value, words", BREAKING, ids=[v for v, _ in BREAKING])
@pytest.mark.parametrize(
    "where, line, loc",
    [
        ("anonymizer", 5, "anonymizers[0].label"),
        ("chain", 5, "anonymizers[0].chain[0].label"),
        ("attacker", 7, "attackers[0].label"),
        ("frontend", 7, "attackers[0].frontend.label"),
        ("metric", 9, "metrics[0].label"),
    ],
)
def test_a_label_that_breaks_tables_is_refused(where, line, loc, value, words):
    fields = {
        "anonymizer": {"anonymizer": f"{{use: mcadams, label: {value}}}"},
        "chain": {"anonymizer": f"{{chain: [{{use: mcadams, label: {value}}}]}}"},
        "attacker": {"attacker": f"{{use: ge2e, label: {value}}}"},
        "frontend": {"attacker": f"{{use: token-probe, frontend: {{use: fbank-rvq, label: {value}}}}}"},
        "metric": {"metrics": f"  - {{use: eer, label: {value}}}"},
    }[where]
    message = refused(experiment(**fields))
    assert f"exp.yaml, line {line} ({loc}): a label is one line" in message and words in message, message


def test_an_empty_label_is_refused():
    assert "a label needs a visible character" in refused(experiment(attacker='{use: ge2e, label: "  "}'))


def test_labels_made_from_params_never_break_tables():
    """A parameter value with '|' or a line break makes the hash form of the default label."""
    exp = load_experiment_text(
        experiment(metrics="  - {use: eer, params: {variant: step}}\n  - {use: min-dcf, params: {p_target: [0.01]}}"),
        "exp.yaml",
    )
    assert [m.label for m in exp.metrics] == ["eer(variant=step)", "min-dcf(p_target=0.01)"]
    from vpeval.config import default_label
    from vpeval.schema import table_breaking

    assert default_label("manifest", {"path": "a|b.csv"}).startswith("manifest#")
    assert default_label("manifest", {"path": "a\nb.csv"}).startswith("manifest#")
    assert table_breaking("mcadams(alpha=0.8)") is None and table_breaking("ecapa/semi-informed") is None
    assert table_breaking("anonymiseur é") is None  # letters of any script are fine


# -- the LaTeX writer escapes what labels may still hold ---------------------------------------------------


def test_latex_escapes_every_special_character_and_flattens_line_breaks():
    assert latex_escape("a<b>c|d") == r"a\textless{}b\textgreater{}c\textbar{}d"
    assert latex_escape("two\n\nlines\x1b[31m") == "two  lines [31m"  # a blank line would end the tabular row


def test_a_latex_table_of_labels_with_specials_escapes_them():
    rows = [
        {
            "metric": "eer",
            "value": 12.5,
            "anonymizer": "mc_adams&50%",
            "attacker": "x<y>|z",
            "scenario": "original",
            "protocol": "O-A",
            "n": 1,
            "gender": "all",
            "ci_low": None,
            "ci_high": None,
            "unit": "%",
            "details": {},
        }
    ]
    text = render_latex(build_table(rows, "eer", ["attacker"], ["anonymizer"]))
    assert r"mc\_adams\&50\%" in text and r"x\textless{}y\textgreater{}\textbar{}z" in text, text
    body = text.split("\\midrule", 1)[1]
    assert "|" not in body and "_" not in body.replace(r"\_", "")
