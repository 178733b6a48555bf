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


# -- one settings model: every data setting out of range is refused at validate ---------------------

from pydantic import ValidationError  # noqa: E402

from vpeval.data.plan import PlanSettings  # noqa: E402

BAD_DATA_SETTINGS = [
    ("attacker_train_speakers", "1.5"),
    ("attacker_train_speakers", "-1"),
    ("attacker_train_speakers", "1.0"),
    ("attacker_train_speakers", "true"),
    ("attacker_train_speakers", ".nan"),
    ("attacker_train_speakers", ".inf"),
    ("validation_speakers", ".nan"),
    ("enroll_share", "-.inf"),
    ("enroll_share", "1.0"),
    ("target_trials_per_speaker", "0"),
    ("nontarget_trials_per_speaker", "2.5"),
    ("same_gender_nontargets", "1"),
]


@pytest.mark.parametrize(("field", "value"), BAD_DATA_SETTINGS)
def test_every_data_setting_out_of_range_is_one_sentence_at_validate(fake_plugins, field, value):
    text = GOOD.replace(
        "  corpus: {use: fake-corpus, params: {speakers: 8}}\n",
        f"  corpus: {{use: fake-corpus, params: {{speakers: 8}}}}\n  {field}: {value}\n",
    )
    msg = _error(text)
    assert msg.startswith(f"exp.yaml, line 5 (data.{field}): ") and "\n" not in msg, msg


@pytest.mark.parametrize(("field", "value"), BAD_DATA_SETTINGS)
def test_the_plan_refuses_what_validate_refuses(field, value):
    """The data plan's settings and the experiment's data section are one model: no drift."""
    import yaml

    with pytest.raises(ValidationError):
        PlanSettings.model_validate({field: yaml.safe_load(value)})


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("enroll_utterances: []", "enroll_utterances"),
        ("enroll_utterances: [1, 3, 1]", "enroll_utterances"),
        ("enroll_utterances: [0]", "enroll_utterances[0]"),
        ("protocols: []", "protocols"),
        ("protocols: [O-O, O-O]", "protocols"),
        ("seed: -7", "seed"),
        ("seed: true", "seed"),
    ],
)
def test_top_level_plan_settings_out_of_range(fake_plugins, line, field):
    msg = _error(GOOD.replace("seed: 3\n", "") + line + "\n")
    assert msg.startswith(f"exp.yaml, line 10 ({field}): ") and "\n" not in msg, msg


def test_nan_anywhere_in_the_data_section_names_its_line(fake_plugins):
    text = GOOD.replace("params: {speakers: 8}", "params: {speakers: 8, extra: {x: [1, .nan]}}")
    msg = _error(text)
    assert msg.startswith("exp.yaml, line 4 (data.corpus.params.extra.x[1]): nan") and "finite" in msg


def test_plugin_params_refuse_nan_and_infinity(fake_plugins):
    msg = _error(GOOD.replace("low: 1.2", "low: .inf"))
    assert "exp.yaml, line 6 (anonymizers[0].params.low)" in msg and "finite" in msg


def test_the_plan_settings_come_from_the_loaded_experiment(fake_plugins):
    exp = load_experiment_text(
        GOOD.replace("params: {speakers: 8}}", "params: {speakers: 8}}\n  attacker_train_speakers: 3")
        + "enroll_utterances: [1, 2]\n",
        "exp.yaml",
    )
    assert exp.plan_settings == PlanSettings(seed=3, attacker_train_speakers=3, enroll_utterances=[1, 2])
    assert isinstance(exp.plan_settings.attacker_train_speakers, int)
    assert load_experiment_text(GOOD, "exp.yaml").plan_settings.attacker_train_speakers == 0.5


def test_no_attacker_training_speakers_only_for_pretrained_attackers(fake_plugins):
    text = GOOD.replace("params: {speakers: 8}}", "params: {speakers: 8}}\n  attacker_train_speakers: 0")
    msg = _error(text)
    assert (
        msg.startswith("exp.yaml, line 5 (data.attacker_train_speakers): attacker fake-spectrum trains")
        and "\n" not in msg
    )


# -- plugins named inside plugin params (vpeval.api.PluginRef) -------------------------------------

import types  # noqa: E402
from typing import Annotated, Any  # noqa: E402

from vpeval import hookimpl  # noqa: E402
from vpeval.api import Anonymizer, Params, PluginRef  # noqa: E402


class CorpusRef(Params):
    use: Annotated[str, PluginRef("corpus", params="params")] = "fake-corpus"
    params: dict[str, Any] = {}


class Chooser(Anonymizer):
    """Waveform anonymizer that names other plugins in its params."""

    name = "ref-chooser"

    class Params(Params):
        pool: CorpusRef = CorpusRef()
        selection: Annotated[
            str,
            PluginRef(
                "anonymizer", params="selection_params", keywords=("random", "farthest-random"), works_on="embedding"
            ),
        ] = "random"
        selection_params: dict[str, Any] = {}
        helper: Annotated[dict[str, Any] | None, PluginRef("corpus")] = None
        fixed: Annotated[dict[str, Any], PluginRef("corpus", name="fake-corpus")] = {}


class Embedder(Anonymizer):
    """Embedding anonymizer with a pool of its own."""

    name = "ref-embedding"
    works_on = ("embedding",)

    class Params(Params):
        pool: CorpusRef = CorpusRef()
        level: int = 1


class Loop(Anonymizer):
    """Names itself by default: a plugin bug the check must survive."""

    name = "ref-loop"

    class Params(Params):
        inner: Annotated[str, PluginRef("anonymizer", params="inner_params")] = "ref-loop"
        inner_params: dict[str, Any] = {}


@pytest.fixture
def ref_manager(fake_plugins):
    from vpeval.plugins import PluginManager

    module = types.ModuleType("ref_plugins")
    module.register_anonymizers = hookimpl(lambda register: [register(c) for c in (Chooser, Embedder, Loop)])
    module.register_anonymizers.__name__ = "register_anonymizers"
    manager = PluginManager()
    manager.register_module(fake_plugins, "vpeval-fakes", "1.0")
    manager.register_module(module, "vpeval-refs", "1.0")
    assert not manager.broken, manager.broken
    return manager


REF = """\
name: t
data:
  corpus: fake-corpus
protocols: [O-O]
attackers: [fake-spectrum]
metrics: [fake-eer]
anonymizers:
  - use: ref-chooser
    params:
      PARAMS
"""


def _ref_error(manager, params: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_experiment_text(REF.replace("PARAMS", params), "exp.yaml", manager=manager)
    return str(info.value)


def test_nested_plugin_references_that_are_right_resolve(ref_manager):
    text = REF.replace(
        "PARAMS",
        "{pool: {use: fake-corpus, params: {speakers: 4}}, selection: ref-embedding, "
        "selection_params: {pool: {params: {utterances: 3}}}, helper: {use: fake-corpus}, fixed: {speakers: 5}}",
    )
    exp = load_experiment_text(text, "exp.yaml", manager=ref_manager)
    assert exp.anonymizers[0].steps[0].params["selection"] == "ref-embedding"


def test_a_typo_in_a_keyword_choice_suggests_the_keyword_not_a_missing_encoder(ref_manager):
    msg = _ref_error(ref_manager, "{selection: farthest-randon}")
    assert msg.startswith(
        "exp.yaml, line 10 (anonymizers[0].params.selection): anonymizer ref-chooser field 'selection'"
    )
    assert "did you mean 'farthest-random'?" in msg and "encoder" not in msg and "\n" not in msg


def test_an_unknown_nested_name_gets_the_nearest_installed_name(ref_manager):
    msg = _ref_error(ref_manager, "{pool: {use: fake-corpse}}")
    assert msg.startswith("exp.yaml, line 10 (anonymizers[0].params.pool.use): ")
    assert "No corpus plugin named 'fake-corpse'" in msg and "did you mean 'fake-corpus'?" in msg


def test_nested_params_are_validated_with_the_nested_line(ref_manager):
    params = "\n      ".join(["pool:", "  use: fake-corpus", "  params:", "    speakers: many"])
    msg = _ref_error(ref_manager, params)
    assert (
        msg.startswith("exp.yaml, line 13 (anonymizers[0].params.pool.params.speakers): ")
        and "corpus fake-corpus" in msg
    )


def test_a_referenced_plugin_must_work_on_what_the_field_needs(ref_manager):
    msg = _ref_error(ref_manager, "{selection: fake-shift}")
    assert "needs an anonymizer that works on embeddings, and fake-shift works on waveforms only" in msg


def test_references_are_checked_recursively(ref_manager):
    msg = _ref_error(ref_manager, "{selection: ref-embedding, selection_params: {pool: {use: fake-corpuss}}}")
    assert msg.startswith(
        "exp.yaml, line 10 (anonymizers[0].params.selection_params.pool.use): anonymizer ref-embedding"
    )


def test_mapping_and_fixed_name_references(ref_manager):
    assert "(anonymizers[0].params.helper.use)" in _ref_error(ref_manager, "{helper: {use: nope}}")
    assert "needs `use: <corpus plugin>`" in _ref_error(ref_manager, "{helper: {params: {}}}")
    msg = _ref_error(ref_manager, "{fixed: {speakerz: 3}}")
    assert "(anonymizers[0].params.fixed.speakerz)" in msg and "corpus fake-corpus has no field 'speakerz'" in msg


def test_a_plugin_that_names_itself_ends_in_one_sentence(ref_manager):
    text = REF.replace("use: ref-chooser", "use: ref-loop").replace("PARAMS", "{}")
    with pytest.raises(ConfigError, match="names itself"):
        load_experiment_text(text, "exp.yaml", manager=ref_manager)


def test_resolved_yaml_reruns_and_refuses_another_installed_version(fake_plugins):
    """resolved.yaml records each plugin's distribution, version and code hash; it validates as an experiment."""
    import yaml

    exp = load_experiment_text(GOOD, "exp.yaml")
    resolved = exp.to_dict()
    again = load_experiment_text(yaml.safe_dump(resolved, sort_keys=False), "resolved.yaml")
    assert again.to_dict() == resolved
    resolved["metrics"][0]["version"] = "0.9"
    with pytest.raises(ConfigError) as info:
        load_experiment_text(yaml.safe_dump(resolved, sort_keys=False), "resolved.yaml")
    assert "(metrics[0].version): metric fake-eer came from vpeval-fakes 0.9" in str(info.value)
    assert "vpeval-fakes 1.0 is installed" in str(info.value) and "\n" not in str(info.value)


def test_a_plugins_code_fingerprint_covers_the_vpeval_libraries_it_requires(monkeypatch):
    import vpeval.codehash as codehash
    from vpeval.plugins import get_plugin_manager

    cls = get_plugin_manager().get("anonymizer", "poolvc")
    assert codehash._library_packages(cls.distribution) == ["vpeval_world"]
    with_library = codehash.code_fingerprint(cls)
    monkeypatch.setattr(codehash, "_CODE_HASHES", {})
    monkeypatch.setattr(codehash, "_library_packages", lambda distribution: [])
    assert codehash.code_fingerprint(cls) != with_library  # an edit in vpeval_world changes poolvc's cache keys


def test_the_code_of_plugins_named_in_params_joins_the_cache_identity(monkeypatch):
    import vpeval.codehash as codehash

    text = (
        "name: x\ndata:\n  corpus: {use: synth, params: {preset: tiny}}\n"
        "anonymizers: [mcadams, {use: poolvc, params: {encoder: {use: ge2e}}}]\n"
        "attackers: [ge2e]\nprotocols: [O-O, O-A]\n"
    )
    mcadams, poolvc = (a.steps[0] for a in load_experiment_text(text, "exp.yaml").anonymizers)
    assert mcadams.helpers == "" and "helpers" not in mcadams.identity()  # names no plugin: key as before
    assert poolvc.helpers and poolvc.identity()["helpers"] == poolvc.helpers  # its encoder and pool corpus
    real = codehash.code_fingerprint
    monkeypatch.setattr(
        codehash, "code_fingerprint", lambda cls: "edited" if cls.__module__.startswith("vpeval_ge2e") else real(cls)
    )
    again = load_experiment_text(text, "exp.yaml").anonymizers
    assert again[1].steps[0].helpers != poolvc.helpers  # the ge2e encoder's code changed: poolvc's key changes
    assert again[0].steps[0].identity() == mcadams.identity()


def test_nested_plugin_params_that_are_not_a_mapping_get_a_sentence():
    """Found by the fuzzer: `params: aaaa` inside a nested plugin reference raised a raw ValueError."""
    text = """\
name: e
data:
  corpus: {use: synth, params: {preset: emotion}}
  attacker_train_speakers: 0
protocols: [O-O]
metrics:
- use: embedding-privacy
  params:
    encoder: ecapa
    encoder_params:
      train_corpus: {use: synth, params: aaaa}
"""
    with pytest.raises(
        ConfigError,
        match=r"line 11 \(metrics\[0\]\.params\.encoder_params\.train_corpus\.params\): the params of "
        r"corpus synth are a mapping",
    ):
        load_experiment_text(text, "exp.yaml")
