"""The toolkit's pandas layout, written without pandas: an empty table is empty at once (it used to loop
forever trimming zeros off no cells). tests/test_vpc_toolkit_results.py compares full files with the
toolkits' own."""

from vpeval_vpc_report.results import _pandas_string


def test_an_empty_table_is_empty_at_once():
    assert _pandas_string(["dataset", "EER"], [], []) == ""


def test_ser_block_with_a_missing_emotion_is_pandas_layout():
    """An emotion one split lacks is NaN in the toolkit's SER block; the expected text is what pandas 2.3.3 prints
    for evaluate_ser's groupby(...).agg({'UAR': ['mean'], 'ACC_sad': ['mean'], 'ACC_neu': ['mean']}) of these fold
    rows (dev anon: 55.615 and 55.614, sad 32.5, neu 50.0 and 51.0; test original: 60.0, neu 51.0), sorted by
    dataset and split, to_string()."""
    from vpeval_vpc_report.results import _toolkit_ser

    def row(dataset, anonymizer, value, accuracy):
        details = {
            "dataset": dataset,
            "fold_rows": [{}],
            "per_class_accuracy": accuracy,
            "accuracy_order": ["sad", "neu"],
        }
        return {"metric": "uar", "anonymizer": anonymizer, "value": value, "details": details}

    rows = [
        row("IEMOCAP_test", "original", 60.0, {"neu": 51.0}),
        row("IEMOCAP_dev", "x", 55.6145, {"sad": 32.5, "neu": 50.5}),
    ]
    assert _toolkit_ser(rows, "x") == "\n".join(
        [
            "   dataset split       ser      UAR ACC_sad ACC_neu",
            "                               mean    mean    mean",
            "0  IEMOCAP   dev      anon  55.6145    32.5    50.5",
            "1  IEMOCAP  test  original  60.0000     NaN    51.0",
        ]
    )


def test_ser_columns_follow_each_toolkit():
    """VPC 2024 prints the ACC columns of the last fold row evaluate_ser computed (accuracy_order of the last
    anonymized folder's row); VPC 2026 those of every fold row, in the order they first come."""
    from vpeval_vpc_report.results import _toolkit_ser

    def row(dataset, anonymizer, folds):
        accuracy = {e: 50.0 for f in folds for e in f}
        details = {"dataset": dataset, "per_class_accuracy": accuracy, "accuracy_order": list(folds[-1])}
        details["fold_rows"] = [{"accuracy": dict.fromkeys(f, 50.0)} for f in folds]
        return {"metric": "uar", "anonymizer": anonymizer, "value": 50.0, "details": details}

    rows = [row("IEMOCAP_dev", "x", [["neu"], ["hap", "sad"]]), row("IEMOCAP_dev", "original", [["ang", "neu"]])]
    header = {every: _toolkit_ser(rows, "x", every_emotion=every).splitlines()[0].split() for every in (False, True)}
    assert header[False] == ["dataset", "split", "ser", "UAR", "ACC_hap", "ACC_sad"]
    assert header[True] == ["dataset", "split", "ser", "UAR", "ACC_ang", "ACC_neu", "ACC_hap", "ACC_sad"]
