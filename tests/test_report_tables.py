"""Report tables for speech metrics: columns appear only when some row fills them."""

from vpeval.report.tables import speech_tables


def row(anonymizer, value, **details):
    return {"metric": "wer", "anonymizer": anonymizer, "attacker": "", "gender": "all", "value": value,
            "unit": "%", "details": details}


def test_empty_attacker_and_setting_columns_are_left_out():
    (table,) = speech_tables([row("original", 20.0), row("mcadams", 40.0)])
    assert "| speech | gender | value |" in table and "setting" not in table
    (table,) = speech_tables([row("original", 20.0, system="+ OHNN"), row("mcadams", 40.0)])
    assert "| speech | setting | gender | value |" in table and "system + OHNN" in table
