"""The toolkit's pandas layout, written without pandas: an empty table is empty at once (it used to loop
forever trimming zeros off no cells). tests/test_vpc_toolkit_results.py compares full files with the
toolkits' own."""

from vpeval_vpc_report.results import _pandas_string


def test_an_empty_table_is_empty_at_once():
    assert _pandas_string(["dataset", "EER"], [], []) == ""
