"""Plugin parameters are validated strictly: nothing is coerced, for every plugin at once.

These values once validated, pydantic turning them into what the field wanted: `lp_order: '20'`,
`epochs: 2.0`, `bootstrap: '100'`, `utterances: true`, `vad: 'no'`, `alpha: '0.8'`. Each is now one
ConfigError naming the file, the line and the field. What YAML writes naturally still passes: a list
for a tuple, text for a path, a mapping for a nested model, a whole number for a float.
"""

from __future__ import annotations

import pytest
from one_plugin_experiment import PLACE, experiment

from vpeval.config import load_experiment_text
from vpeval.errors import ConfigError
from vpeval.params import validate_params
from vpeval.plugins import get_plugin_manager

# (slot, plugin text, field below params, words the sentence holds)
COERCED = [
    ("anonymizer", "{use: mcadams, params: {lp_order: '20'}}", "lp_order", "valid integer"),
    ("attacker", "{use: ecapa, params: {epochs: 2.0}}", "epochs", "valid integer"),
    ("metric", "{use: eer, params: {bootstrap: '100'}}", "bootstrap", "valid integer"),
    ("corpus", "{use: synth, params: {utterances: true}}", "utterances", "valid integer"),
    ("attacker", "{use: ge2e, params: {vad: 'no'}}", "vad", "valid boolean"),
    ("attacker", "{use: ge2e, params: {vad: 1}}", "vad", "valid boolean"),
    ("anonymizer", "{use: mcadams, params: {alpha: '0.8'}}", "alpha", "valid number"),
    ("anonymizer", "{use: mcadams, params: {alpha_range: ['0.5', 0.9]}}", "alpha_range[0]", "valid number"),
    ("corpus", "{use: synth, params: {seed: 3.0}}", "seed", "valid integer"),
    # inside a plugin named by another plugin's parameters
    ("metric", "{use: wer, params: {asr_params: {beam_size: '5'}}}", "asr_params.beam_size", "valid integer"),
    (
        "anonymizer",
        "{use: poolvc, params: {pool: {use: synth, params: {speakers: '40'}}}}",
        "pool.params.speakers",
        "valid integer",
    ),
]


@pytest.mark.parametrize("slot, text, field, words", COERCED, ids=[c[1] for c in COERCED])
def test_a_value_of_the_wrong_type_is_refused_not_coerced(slot, text, field, words):
    with pytest.raises(ConfigError) as info:
        load_experiment_text(experiment(slot, text), "exp.yaml")
    message = str(info.value)
    line, where = PLACE[slot]
    assert f"exp.yaml, line {line} ({where}.params.{field}): " in message, message
    assert words in message, message
    assert "\n" not in message and "Traceback" not in message


# YAML values JSON cannot carry: one sentence saying what YAML made of them
NOT_JSON = [
    ("corpus", "{use: manifest, params: {path: 2024-01-01}}", "path", "date or time in YAML", "'2024-01-01'"),
    ("corpus", "{use: manifest, params: {path: 2024-01-01 10:30:00}}", "path", "date or time in YAML", "in quotes"),
    (
        "attacker",
        "{use: multiutt, params: {frame_source_params: {start: 2024-01-01}}}",
        "frame_source_params.start",
        "date or time in YAML",
        "'2024-01-01'",
    ),
]


@pytest.mark.parametrize("slot, text, field, words, advice", NOT_JSON, ids=[c[1] for c in NOT_JSON])
def test_a_yaml_value_json_cannot_carry_gets_one_sentence(slot, text, field, words, advice):
    with pytest.raises(ConfigError) as info:
        load_experiment_text(experiment(slot, text), "exp.yaml")
    message = str(info.value)
    line, where = PLACE[slot]
    assert f"exp.yaml, line {line} ({where}.params.{field}): " in message, message
    assert words in message and advice in message, message
    assert "\n" not in message and "Traceback" not in message


@pytest.mark.parametrize(
    "value, words",
    [(b"hello", "!!binary"), ({"a", "b"}, "!!set"), ({1: "x"}, "key 1 in quotes"), (object(), "not a parameter value")],
)
def test_values_no_parameter_takes_are_refused_with_a_sentence(value, words):
    """The YAML loader refuses !!binary and !!set tags and gives keys as text already; a plugin's own
    `PluginContext.get` call, or a caller of validate_params, gets the same one sentence."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as info:
        validate_params(get_plugin_manager().get("corpus", "manifest"), {"path": "m.csv", "extra": [value]})
    error = info.value.errors()[0]
    assert error["loc"][:2] == ("extra", 0) and words in error["msg"], error


# What YAML writes for these types still validates
ACCEPTED = [
    ("anonymizer", "{use: mcadams, params: {alpha_range: [0.5, 0.8]}}", lambda p: p["alpha_range"] == [0.5, 0.8]),
    ("anonymizer", "{use: mcadams, params: {alpha: 1}}", lambda p: p["alpha"] == 1.0),  # a whole number for a float
    ("attacker", "{use: ecapa, params: {channels: [16, 16, 16, 16, 48], epochs: 2}}", lambda p: p["channels"][4] == 48),
    ("attacker", "{use: ge2e, params: {vad: false}}", lambda p: p["vad"] is False),
    ("corpus", "{use: synth, params: {preset: tiny, seed: 4}}", lambda p: p["seed"] == 4),
]


@pytest.mark.parametrize("slot, text, check", ACCEPTED, ids=[c[1] for c in ACCEPTED])
def test_values_of_the_right_json_type_validate(slot, text, check):
    exp = load_experiment_text(experiment(slot, text), "exp.yaml")
    plugin = {
        "corpus": exp.corpus,
        "anonymizer": exp.anonymizers[0].steps[0],
        "attacker": exp.attackers[0].plugin,
        "metric": exp.metrics[0],
    }[slot]
    assert check(plugin.params), plugin.params


def test_nested_models_and_paths_come_from_mappings_and_text():
    manager = get_plugin_manager()
    dast = validate_params(
        manager.get("attacker", "dast"),
        {"stage2_anonymizers": [{"use": "mcadams", "params": {"alpha": 0.8}}], "stage1": {"epochs": 3}},
    )
    assert dast.stage2_anonymizers[0].use == "mcadams" and dast.stage1.epochs == 3
    assert dast.stage1.batch_size == 64  # the stage's paper setting for what the mapping leaves out
    kaldi = validate_params(manager.get("corpus", "kaldi"), {"root": "data/kaldi"})
    assert str(kaldi.root) == "data/kaldi"


def test_the_core_schema_is_strict_too():
    with pytest.raises(ConfigError, match=r"line 1 \(seed\)"):
        load_experiment_text("seed: '3'\n" + experiment("metric", "{use: eer}"), "exp.yaml")
