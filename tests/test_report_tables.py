"""Report tables for speech metrics: columns appear only when some row fills them."""

from vpeval.report.tables import attack_tables, speech_tables


def row(anonymizer, value, **details):
    return {
        "metric": "wer",
        "anonymizer": anonymizer,
        "attacker": "",
        "gender": "all",
        "value": value,
        "unit": "%",
        "details": details,
    }


def test_empty_attacker_and_setting_columns_are_left_out():
    (table,) = speech_tables([row("original", 20.0), row("mcadams", 40.0)])
    assert "| speech | gender | value |" in table and "setting" not in table
    (table,) = speech_tables([row("original", 20.0, system="+ OHNN"), row("mcadams", 40.0)])
    assert "| speech | setting | gender | value |" in table and "system + OHNN" in table


def embedding_rows(label, split, uar_shift=0.0):
    """Rows as two embedding-privacy entries (utterance and speaker split) give: same EERs, different UARs."""
    common = {"anonymizer": "original", "attacker": "", "gender": "all", "unit": "%", "metric_plugin": label}
    rows = []
    for system, protocol, value in (("original", "O-O", 9.77), ("+ OHNN", "O-A", 52.11), ("+ OHNN", "A-A", 9.77)):
        rows.append(
            {**common, "metric": "embedding-eer", "value": value, "details": {"protocol": protocol, "system": system}}
        )
    for system, value in (("original", 68.29), ("+ OHNN", 68.50)):
        rows.append(
            {
                **common,
                "metric": "embedding-uar",
                "value": value - uar_shift,
                "details": {"system": system, "split": split},
            }
        )
    return rows


def test_two_entries_that_computed_the_same_rows_show_each_row_once():
    rows = embedding_rows("embedding-privacy#ebaa52", "utterance") + embedding_rows(
        "embedding-privacy#504ca0", "speaker", 20.0
    )
    eer_table, uar_table = speech_tables(rows)
    assert eer_table.count("| original | system + OHNN, protocol O-A | all | 52.11 |") == 1
    assert len([line for line in eer_table.splitlines() if line.startswith("| original")]) == 3
    assert "metric entry" not in eer_table


def test_the_emotion_split_is_a_column_of_its_own():
    rows = embedding_rows("embedding-privacy#ebaa52", "utterance") + embedding_rows(
        "embedding-privacy#504ca0", "speaker", 20.0
    )
    _, uar_table = speech_tables(rows)
    assert "| original | system + OHNN, split utterance | all | 68.50 |" in uar_table
    assert "| original | system + OHNN, split speaker | all | 48.50 |" in uar_table


def test_rows_of_two_labels_that_would_look_alike_show_the_label():
    a = [{**row("mcadams", 40.0), "metric_plugin": "wer#tiny"}]
    b = [{**row("mcadams", 30.0), "metric_plugin": "wer#base"}]
    (table,) = speech_tables(a + b)
    assert "| speech | gender | value | metric entry |" in table
    assert "| mcadams | all | 40.00 | wer#tiny |" in table and "| mcadams | all | 30.00 | wer#base |" in table


def test_attack_tables_of_two_entries_of_one_metric_are_titled_by_label():
    def attack(label, value):
        return {
            "metric": "eer",
            "metric_plugin": label,
            "anonymizer": "mcadams",
            "attacker": "ge2e",
            "scenario": "original",
            "protocol": "O-A",
            "n": 1,
            "gender": "all",
            "value": value,
            "unit": "%",
            "details": {},
        }

    tables = attack_tables([attack("eer#a", 40.0), attack("eer#b", 30.0)])
    assert len(tables) == 2 and "from eer#a" in tables[0] and "40.00" in tables[0] and "30.00" in tables[1]


def test_per_class_recalls_reach_the_report_in_table3_layout():
    def uar(speech, value, recalls):
        return {
            "metric": "uar",
            "metric_plugin": "uar",
            "anonymizer": speech,
            "attacker": "",
            "gender": "all",
            "value": value,
            "unit": "%",
            "details": {
                "speech": speech,
                "per_class_recall": dict(zip(("sad", "neutral"), recalls)),
                "table3": {"columns": ["UAR", "Sad", "Neutral"], "row": [value, *recalls]},
            },
        }

    (table,) = speech_tables([uar("original", 60.0, [70.0, 50.0]), uar("mcadams", 45.0, [40.0, 50.0])])
    assert "| speech | UAR | Sad | Neutral |" in table
    assert "| original | 60.00 | 70.00 | 50.00 |" in table and "| mcadams | 45.00 | 40.00 | 50.00 |" in table
