"""YAML that would hang or give a message without a place: alias bombs, deep nesting, bad characters."""

import time

import pytest
from click.testing import CliRunner

import vpeval.config  # noqa: F401  (imported before the timing below, which is about parsing, not start-up)
from vpeval.cli import main
from vpeval.errors import ConfigError
from vpeval.yamlsource import MAX_VALUES, parse_yaml


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
    assert f"{path}, line" in result.stderr and f"more than {MAX_VALUES} values" in result.stderr
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


@pytest.mark.parametrize("value", ["2024-13-45", "1" * 5000])
def test_unreadable_scalars_name_the_line(value):
    msg = _message(f"name: x\nseed: {value}\n")
    assert msg.startswith("exp.yaml, line 2:") and "quote it" in msg
