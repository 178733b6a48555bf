"""The worst-case table: per anonymizer, protocol and N, the lowest EER over attackers and who reached it."""

from vpeval.report.worst_case import worst_case_tables, worst_cases


def row(metric, anonymizer, attacker, protocol, n, value, gender="all", **extra):
    return {
        "metric": metric,
        "metric_plugin": metric,
        "anonymizer": anonymizer,
        "attacker": attacker,
        "scenario": "original",
        "protocol": protocol,
        "n": n,
        "gender": gender,
        "value": value,
        "ci_low": None,
        "ci_high": None,
        "unit": "%",
        "details": {},
        **extra,
    }


ROWS = [
    row("eer", "mcadams", "ge2e", "O-A", 1, 42.0),
    row("eer", "mcadams", "ecapa", "O-A", 1, 31.0),
    row("eer", "mcadams", "probe", "O-A", 1, 45.0),
    row("eer", "mcadams", "ge2e", "A-A", 1, 12.0),
    row("eer", "mcadams", "ecapa", "A-A", 1, 19.0),
    row("eer", "mcadams", "ecapa", "O-O", 1, 2.0),  # not about the anonymizer: left out
    row("eer", "mcadams", "ge2e", "O-A", 3, 38.0),
    row("eer", "mcadams", "ecapa", "O-A", 3, 20.0),
    row("eer", "poolvc", "ge2e", "O-A", 1, 10.0),
    row("eer", "poolvc", "ecapa", "O-A", 1, 30.0),
    row("linkability", "mcadams", "ge2e", "O-A", 1, 0.3),
    row("linkability", "mcadams", "ecapa", "O-A", 1, 0.2),
    row("linkability", "mcadams", "probe", "O-A", 1, 0.5),
]


def test_lowest_eer_and_its_attacker_per_protocol_and_n():
    cases, metric, note = worst_cases(ROWS)
    assert metric == "eer" and note == ""
    found = {(w.anonymizer, w.protocol, w.n): (w.eer["value"], w.eer["attacker"]) for w in cases}
    assert found == {
        ("mcadams", "O-A", 1): (31.0, "ecapa"),
        ("mcadams", "A-A", 1): (12.0, "ge2e"),
        ("mcadams", "O-A", 3): (20.0, "ecapa"),
        ("poolvc", "O-A", 1): (10.0, "ge2e"),
    }
    linked = {(w.anonymizer, w.protocol, w.n): w.linkability for w in cases}
    assert linked[("mcadams", "O-A", 1)]["attacker"] == "probe" and linked[("mcadams", "O-A", 1)]["value"] == 0.5
    assert linked[("mcadams", "A-A", 1)] is None


def test_the_gender_average_is_what_is_compared():
    rows = [
        row("eer", "x", "a", "O-A", 1, 10.0, "all"),
        row("eer", "x", "a", "O-A", 1, 40.0, "avg"),
        row("eer", "x", "a", "O-A", 1, 5.0, "f"),
        row("eer", "x", "b", "O-A", 1, 30.0, "all"),
    ]
    (case,), _, _ = worst_cases(rows)
    assert (case.eer["attacker"], case.eer["value"]) == ("b", 30.0)


def test_tables_one_per_anonymizer_name_the_attacker():
    mcadams, poolvc = worst_case_tables(ROWS)
    assert mcadams.startswith("### Worst case for mcadams") and poolvc.startswith("### Worst case for poolvc")
    assert "| O-A | 1 | 31.00 | ecapa | 0.50 | probe |" in mcadams
    assert "| A-A | 1 | 12.00 | ge2e |  |  |" in mcadams
    assert "| O-A | 1 | 10.00 | ge2e |" in poolvc and "linkability" not in poolvc
    assert "| O-O |" not in mcadams
    # One line says what the table marks: the strongest attacker, the worst case for privacy.
    meaning = "Each row names the strongest attacker of this run (lowest eer [%], highest linkability): the worst"
    assert meaning + " case for privacy" in mcadams and "worst case" not in poolvc  # said once, under the first


def test_a_second_eer_entry_is_named_not_mixed_in():
    rows = ROWS + [
        dict(row("eer", "mcadams", "ge2e", "O-A", 1, 1.0), metric_plugin="eer#2", details={"variant": "rocch"})
    ]
    cases, _, note = worst_cases(rows)
    assert min(w.eer["value"] for w in cases) == 10.0 and note == "metric entry eer"
