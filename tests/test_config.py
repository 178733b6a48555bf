"""Experiment files: schema, aliases, plugin resolution and file-and-line errors."""

import pytest

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError

GOOD = """\
name: t
seed: 3
data:
  corpus: {use: fake-corpus, params: {speakers: 8}}
anonymizers:
  - {use: fake-shift, params: {low: 1.2}}
attackers:
  - {use: fake-spectrum, train_on: lazy-informed}
  - {use: fake-spectrum, train_on: semi-informed}
metrics: [fake-eer]
"""


def test_good_experiment_resolves_with_defaults(fake_plugins):
    exp = load_experiment_text(GOOD, "exp.yaml")
    assert exp.corpus.params == {"speakers": 8, "utterances": 6}
    assert exp.anonymizers[0].steps[0].params == {"low": 1.2, "high": 1.6}
    assert [a.train_on for a in exp.attackers] == ["original", "anonymized"]
    assert exp.attackers[1].label.endswith("/semi-informed")
    assert exp.metrics[0].use == "fake-eer" and exp.metrics[0].distribution == "vpeval-fakes"
    resolved = exp.to_dict()
    assert resolved["attackers"][0]["version"] == "1.0"
    assert resolved["protocols"] == ["O-O", "O-A", "A-A"]


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    return str(info.value)


def test_misspelled_plugin_names_file_line_and_suggestion(fake_plugins):
    msg = _error(GOOD.replace("use: fake-spectrum, train_on: semi", "use: fake-spectrun, train_on: semi"))
    assert "exp.yaml, line 9 (attackers[1].use)" in msg
    assert "did you mean 'fake-spectrum'" in msg


def test_wrong_parameter_type_names_line(fake_plugins):
    msg = _error(GOOD.replace("low: 1.2", "low: high"))
    assert "exp.yaml, line 6 (anonymizers[0].params.low)" in msg


def test_unknown_parameter_is_refused(fake_plugins):
    msg = _error(GOOD.replace("speakers: 8", "speakerz: 8"))
    assert "line 4" in msg and "speakerz" in msg


def test_unknown_top_level_field_suggests(fake_plugins):
    msg = _error(GOOD + "protocol: [O-O]\n")
    assert "line 11" in msg and "did you mean 'protocols'" in msg


def test_bad_protocol_and_scenario(fake_plugins):
    assert "O-X" in _error(GOOD + "protocols: [O-O, O-X]\n")
    msg = _error(GOOD.replace("train_on: lazy-informed", "train_on: clever"))
    assert "line 8" in msg and "clever" in msg


def test_invalid_yaml_names_line():
    msg = _error("name: x\ndata: {corpus: [\n")
    assert msg.startswith("exp.yaml, line") and "invalid YAML" in msg


def test_python_object_tags_are_refused():
    msg = _error("name: !!python/object/apply:os.system [echo hi]\n")
    assert "not allowed" in msg


def test_merge_keys_share_settings_and_explicit_keys_win():
    from vpeval.yamlsource import parse_yaml

    doc = parse_yaml("a: &base {x: 1, y: 2}\nb: {<<: *base, y: 3}\nc: {y: 4, <<: [*base]}\n")
    assert doc.data == {"a": {"x": 1, "y": 2}, "b": {"x": 1, "y": 3}, "c": {"y": 4, "x": 1}}
    with pytest.raises(ConfigError, match="appears twice"):
        parse_yaml("b: {y: 3, y: 4}\n")
    with pytest.raises(ConfigError, match="merges mappings only"):
        parse_yaml("a: &s [1]\nb: {<<: *s}\n")


def test_anonymized_protocols_need_an_anonymizer(fake_plugins):
    text = "name: t\ndata: {corpus: fake-corpus}\nattackers: [fake-spectrum]\nmetrics: [fake-eer]\n"
    assert "anonymizer" in _error(text)
    ok = load_experiment_text(text + "protocols: [O-O]\n", "exp.yaml")
    assert ok.experiment.protocols == ["O-O"]


def test_chain_and_level(fake_plugins):
    text = GOOD.replace(
        "  - {use: fake-shift, params: {low: 1.2}}",
        "  - {chain: [fake-shift, {use: fake-shift, params: {high: 2.0}}], level: speaker, label: double}",
    )
    exp = load_experiment_text(text, "exp.yaml")
    assert exp.anonymizers[0].label == "double" and exp.anonymizers[0].level == "speaker"
    assert [s.params["high"] for s in exp.anonymizers[0].steps] == [1.6, 2.0]


def test_all_errors_reported_together(fake_plugins):
    msg = _error(GOOD.replace("fake-shift", "fake-shiftt").replace("fake-eer", "fake-eeer"))
    assert "anonymizers[0].use" in msg and "metrics[0].use" in msg


def test_init_from_must_name_another_attacker(fake_plugins):
    msg = _error(GOOD.replace("train_on: semi-informed}", "train_on: semi-informed, init_from: fake-spectrun}"))
    assert "line 9 (attackers[1].init_from)" in msg and "did you mean 'fake-spectrum'" in msg


def test_code_fingerprint_is_part_of_the_identity(fake_plugins):
    exp = load_experiment_text(GOOD, "exp.yaml")
    plugin = exp.attackers[0].plugin
    assert len(plugin.code) == 16 and plugin.identity()["code"] == plugin.code
    assert exp.to_dict()["attackers"][0]["code"] == plugin.code
