"""YAML that would hang or give a message without a place: alias bombs, deep nesting, bad characters."""

import time

import pytest
from click.testing import CliRunner

import vpeval.config  # noqa: F401  (imported before the timing below, which is about parsing, not start-up)
from vpeval import yamlsource
from vpeval.cli import main
from vpeval.errors import ConfigError
from vpeval.yamlsource import MAX_ALIAS_VALUES, MAX_FILE_BYTES, MAX_WRITTEN_VALUES, parse_yaml


def alias_bomb(levels: int, width: int) -> str:
    """'Billion laughs': each level lists the previous one `width` times, so the size is width**levels."""
    lines = ["name: lol", "a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def validate(path):
    return CliRunner().invoke(main, ["validate", str(path)], catch_exceptions=False)


def test_alias_bomb_fails_fast_with_exit_2(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(alias_bomb(8, 9))  # 9**8 = 43 million values once expanded
    assert len(path.read_bytes()) < 500
    start = time.perf_counter()
    result = validate(path)
    assert time.perf_counter() - start < 1.0
    assert result.exit_code == 2
    assert f"{path}, line" in result.stderr and f"more than {MAX_ALIAS_VALUES} values" in result.stderr
    assert "Traceback" not in result.output


def test_aliases_and_merge_keys_within_the_bound_still_work():
    doc = parse_yaml(alias_bomb(3, 9))  # 729 values
    assert len(doc.data["a3"]) == 9 and doc.data["a3"][0][0][0] == ["lol"]
    doc = parse_yaml("base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\n")
    assert doc.data["use"] == {"x": 1, "y": 3}


@pytest.mark.parametrize("name, marker", [("demo.yaml", "&small_ecapa"), ("emotion-embedding.yaml", "<<: *")])
def test_shipped_experiments_with_anchors_and_merge_keys_validate(name, marker):
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "experiments" / name
    assert marker in path.read_text()
    result = validate(path)
    assert result.exit_code == 0, result.output


def _message(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "exp.yaml")
    return str(info.value)


def test_self_referencing_alias_and_deep_nesting_are_refused():
    assert _message("name: &x [*x]\n").startswith("exp.yaml, line 1:")
    assert "nest" in _message("a: " + "[" * 100 + "]" * 100 + "\n")
    assert "nest" in _message("a: " + "[" * 5000 + "]" * 5000 + "\n")  # deeper than the YAML composer recurses


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b"])
def test_control_character_names_file_and_line(char):
    msg = _message(f"name: x\nseed: 1{char}\n")
    assert msg.startswith("exp.yaml, line 2:") and f"U+{ord(char):04X}" in msg


def test_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_bytes(b"name: x\nseed: 1\nlabel: caf\xe9\n")
    result = validate(path)
    assert result.exit_code == 2
    assert f"{path}, line 3: the file is not UTF-8 text" in result.stderr
    assert "Traceback" not in result.output


def test_nul_byte_through_the_cli(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_bytes(b"name: x\x00\n")
    result = validate(path)
    assert result.exit_code == 2 and f"{path}, line 1:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unreadable_scalars_name_the_line():
    msg = _message("name: x\nseed: 2024-13-45\n")
    assert msg.startswith("exp.yaml, line 2:") and "quote it" in msg


def test_a_number_of_thousands_of_digits_is_one_clear_sentence():
    # Before: "quote it to keep it as text", and quoted, the seed was refused as no integer (issue 38).
    assert _message(f"name: x\nseed: {'1' * 5000}\n") == (
        "exp.yaml, line 2: the number 11111111111111111111... has 5000 digits, far beyond any field's upper bound; "
        "write a smaller number."
    )
    # Quoted, it is refused as no integer, in a sentence that quotes only its start.
    with pytest.raises(ConfigError) as info:
        vpeval.config.load_experiment_text(f"name: x\nseed: '{'1' * 5000}'\n", "exp.yaml")
    assert f"(seed): input should be a valid integer, got '{'1' * 39}... (5002 characters)" in str(info.value)
    assert len(str(info.value)) < 400


def _experiment_with_n(values: str) -> str:
    return (
        "name: big\nseed: 0\ndata:\n  corpus: {use: synth, params: {preset: demo}}\n"
        "attackers:\n  - {use: ge2e}\nprotocols: [O-O]\n"
        f"enroll_utterances: [{values}]\n"
    )


def test_a_long_plain_list_is_no_alias_bomb(tmp_path):
    from vpeval.settings import MAX_N

    # 99,990 values written out, no alias: refused as an alias bomb before (it counted every node).
    path = tmp_path / "long.yaml"
    path.write_text(_experiment_with_n(", ".join(str(n) for n in range(1, 99991))))
    result = validate(path)
    # N is utterances per trial side: the schema bounds each N, so the first N past the bound is named.
    assert result.exit_code == 2 and "alias" not in result.output
    assert (
        f"{path}, line 8 (enroll_utterances[{MAX_N}]): input should be less than or equal to {MAX_N}" in result.stderr
    )
    # one sentence per wrong value would be 98,990 lines: the first ones, then a count of the rest
    from vpeval.config import MAX_ERROR_LINES

    lines = result.stderr.strip().splitlines()
    assert len(lines) == MAX_ERROR_LINES + 1 and all(str(path) in line for line in lines)
    assert lines[-1].endswith(
        f"... and {99990 - MAX_N - MAX_ERROR_LINES} more errors; fix the ones above and validate again."
    )
    path.write_text(_experiment_with_n(", ".join(str(n) for n in range(1, MAX_N + 1))))
    assert validate(path).exit_code == 0


def test_more_values_written_out_than_the_bound_are_refused_for_their_number(tmp_path, monkeypatch):
    assert len(",".join(["1"] * MAX_WRITTEN_VALUES)) < MAX_FILE_BYTES  # the count, not the size, is what stops it
    monkeypatch.setattr(yamlsource, "MAX_WRITTEN_VALUES", 1000)  # the same check, without composing 200,000 values
    path = tmp_path / "huge.yaml"
    path.write_text("name: x\nitems: [\n" + ",\n".join(["1"] * 1010) + "]\n")
    result = validate(path)
    assert result.exit_code == 2
    assert f"{path}, line 998: the file holds more than 1000 values" in result.stderr  # the 1001st value
    assert "alias" not in result.stderr and "Traceback" not in result.output


def test_an_alias_that_doubles_a_long_list_is_refused_as_expansion(monkeypatch):
    monkeypatch.setattr(yamlsource, "MAX_ALIAS_VALUES", 1000)
    items = ", ".join(["1"] * 1005)
    msg = _message(f"name: x\nlong: &l [{items}]\nother: [2]\ncopy: {{of: *l}}\n")
    assert msg.startswith("exp.yaml, line 4:") and "aliases expand to more than 1000 values" in msg
    doc = parse_yaml(f"name: x\nlong: &l [{items}]\n")  # the list written out once is fine
    assert len(doc.data["long"]) == 1005
    doc = parse_yaml("name: x\nshort: &s [" + ", ".join(["1"] * 900) + "]\ncopy: *s\n")  # 901 added: within
    assert len(doc.data["copy"]) == 900


def test_an_experiment_file_over_the_size_limit_is_refused_before_reading(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"name: x\n# " + b"x" * MAX_FILE_BYTES + b"\n")
    result = validate(path)
    assert (
        result.exit_code == 2 and f"Experiment file {path} cannot be used: it is 4 MB, over the 4 MB" in result.stderr
    )
