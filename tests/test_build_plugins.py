"""Every shipped experiment builds its plugins through the one path a run uses (vpeval.build).

`vpeval validate` once called the README's `{use: mcadams, params: {alpha: 0.8}}` valid, and the run then
stopped with a pydantic traceback at its first stage: the runner re-validated the params' dump, which
holds every field. Here each experiment file and each whole experiment in the documentation is resolved
and every plugin it names (corpus, anonymizer steps, attackers, frontends, metrics, executor and the
helpers its plugins name through PluginRef fields) is built from the resolved experiment, as the runner
and `PluginContext.get` build them: instantiation only, no audio, no models.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from pydantic import model_validator

from vpeval import config_checks, hookimpl
from vpeval.api import Anonymizer, Params, PluginContext
from vpeval.build import build_resolved
from vpeval.config import load_experiment, load_experiment_text
from vpeval.errors import ConfigError
from vpeval.params import round_trip_problem, validate_params
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.references import named_plugins
from vpeval.schema import ResolvedExperiment

ROOT = Path(__file__).resolve().parents[1]
EXPERIMENT_FILES = sorted((ROOT / "experiments").glob("*.yaml"))
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def documented_experiments() -> list[tuple[str, str]]:
    """(name, text) of every ```yaml block of README.md and docs/*.md that is a whole experiment."""
    found = []
    for document in DOCUMENTS:
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", document.read_text(encoding="utf-8"), re.S)):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and {"name", "data"} <= set(data):
                found.append((f"{document.name}#{i}", block))
    return found


DOCUMENTED = documented_experiments()


def test_the_documentation_holds_the_readme_example():
    assert any("mcadams" in text and "alpha: 0.8" in text for _, text in DOCUMENTED), [n for n, _ in DOCUMENTED]


def resolved_plugins(exp: ResolvedExperiment):
    yield exp.corpus
    for anonymizer in exp.anonymizers:
        yield from anonymizer.steps
    for attacker in exp.attackers:
        yield attacker.plugin
        if attacker.frontend is not None:
            yield attacker.frontend
    yield from exp.metrics
    if exp.executor is not None:
        yield exp.executor


def build_everything(exp: ResolvedExperiment, work: Path) -> list[str]:
    """Build every plugin and helper the experiment names; what was built, as kind:name."""
    manager = get_plugin_manager()
    built = []
    for plugin in resolved_plugins(exp):
        instance = build_resolved(manager, plugin, PluginContext(work_dir=work / plugin.kind / plugin.use))
        assert instance.params.model_dump(mode="json") == plugin.params
        built.append(f"{plugin.kind}:{plugin.use}")
        context = plugin_context(work_dir=work / "helpers", manager=manager)
        for kind, name, params in named_plugins(manager, instance.params):
            helper = context.get(kind, name, params)  # how the plugin itself asks for it
            assert helper.name == name
            built.append(f"{kind}:{name}")
    return built


def required_variables(path: Path, tmp_path: Path) -> dict[str, str]:
    """A value for each variable the file needs from the command line (a folder of the test's)."""
    declared = (yaml.safe_load(path.read_text()) or {}).get("variables") or {}
    return {name: str(tmp_path / name.lower()) for name, default in declared.items() if default is None}


@pytest.mark.parametrize("path", EXPERIMENT_FILES, ids=[p.name for p in EXPERIMENT_FILES])
def test_every_experiment_file_builds_its_plugins(path, tmp_path, monkeypatch):
    # Building needs no data: the files' folders (another recipe's output, a user's VPC root) need not exist.
    monkeypatch.setattr(
        config_checks, "CHECKS", [c for c in config_checks.CHECKS if c is not config_checks.paths_exist]
    )
    exp = load_experiment(path, variables=required_variables(path, tmp_path))
    built = build_everything(exp, tmp_path)
    assert len(built) >= 3  # a corpus, an attacker or metric, and so on


@pytest.mark.parametrize("name, text", DOCUMENTED, ids=[n for n, _ in DOCUMENTED])
def test_every_documented_experiment_builds_its_plugins(name, text, tmp_path):
    build_everything(load_experiment_text(text, name), tmp_path)


@pytest.mark.parametrize(
    "path",
    [p for p in EXPERIMENT_FILES if p.name in ("anonymizers-vs-ge2e.yaml", "emotion-speech.yaml")],
    ids=lambda p: p.name,
)
def test_fixed_alpha_mcadams_experiments_build(path, tmp_path):
    """The two shipped experiments with a fixed McAdams alpha: a pydantic traceback at the first stage before."""
    exp = load_experiment(path)
    mcadams = [s for a in exp.anonymizers for s in a.steps if s.use == "mcadams" and s.params["alpha"] is not None]
    assert mcadams
    for step in mcadams:
        assert (
            build_resolved(get_plugin_manager(), step, PluginContext(work_dir=tmp_path)).params.alpha
            == step.params["alpha"]
        )


def test_resolved_yaml_reads_back_to_the_same_plugins(tmp_path):
    """resolved.yaml (the dump) is itself an experiment: it resolves to the same params and builds."""
    text = dict(DOCUMENTED)["README.md#0"]
    exp = load_experiment_text(text, "README.md")
    again = load_experiment_text(yaml.safe_dump(exp.to_dict()), "resolved.yaml")
    assert [p.params for p in resolved_plugins(again)] == [p.params for p in resolved_plugins(exp)]
    assert [p.identity() for p in resolved_plugins(again)] == [p.identity() for p in resolved_plugins(exp)]
    build_everything(again, tmp_path)


# -- a plugin whose Params cannot read back their own dump is refused at validate ------------------


class FieldsSetAnonymizer(Anonymizer):
    """A broken plugin: its check depends on which fields were given, not on their values."""

    name: ClassVar[str] = "fields-set-check"

    class Params(Params):
        fixed: float | None = None
        spread: float = 0.5

        @model_validator(mode="after")
        def _one(self):
            if self.fixed is not None and "spread" in self.model_fields_set:
                raise ValueError("set either fixed or spread")
            return self

    def anonymize(self, audio, sample_rate, voice):
        return audio


@pytest.fixture
def broken_plugin():
    module = types.ModuleType("vpeval_test_fields_set")

    @hookimpl
    def register_anonymizers(register):
        register(FieldsSetAnonymizer)

    module.register_anonymizers = register_anonymizers
    module.__file__ = __file__  # its "source" for the code hash
    FieldsSetAnonymizer.__module__ = module.__name__
    sys.modules[module.__name__] = module
    manager = get_plugin_manager()
    manager.register_module(module, "vpeval-test-broken", "0.3")
    yield
    manager.unregister_module(module)
    del sys.modules[module.__name__]


def test_params_that_fail_their_own_round_trip_are_a_plugin_bug_at_validate(broken_plugin):
    text = """\
name: broken
data:
  corpus: {use: synth, params: {preset: tiny}}
anonymizers:
  - {use: fields-set-check, params: {fixed: 0.8}}
attackers: [ge2e]
"""
    with pytest.raises(ConfigError) as info:
        load_experiment_text(text, "exp.yaml")
    message = str(info.value)
    assert "exp.yaml, line 5 (anonymizers[0].params): " in message, message
    assert "bug in vpeval-test-broken 0.3" in message and "set either fixed or spread" in message, message
    # the same plugin with only the default is fine: the check is on the dump, not on the plugin
    load_experiment_text(text.replace("params: {fixed: 0.8}", "params: {}"), "exp.yaml")


def test_round_trip_problem_names_what_changed():
    cls = FieldsSetAnonymizer
    assert round_trip_problem(cls, validate_params(cls, {})) is None
    assert "does not validate again" in round_trip_problem(cls, validate_params(cls, {"fixed": 0.8}))


def test_every_registered_plugin_reads_back_its_defaults():
    """validate(dump(validate(defaults))) == validate(defaults) for every installed plugin; a plugin with a
    required field (a file, a list of systems) gets the least it needs from NEEDS."""
    manager = get_plugin_manager()
    checked = []
    for kind, registration in manager.all():
        cls = registration.cls
        if cls.__module__ == "vpeval_test_fields_set":
            continue
        params = validate_params(cls, NEEDS.get(f"{kind}:{cls.name}", {}))
        assert round_trip_problem(cls, params) is None, f"{kind} {cls.name}: {round_trip_problem(cls, params)}"
        checked.append(f"{kind}:{cls.name}")
    assert set(NEEDS) <= set(checked)
    assert {"anonymizer:mcadams", "attacker:multiutt", "corpus:synth", "metric:eer", "executor:local"} <= set(checked)


NEEDS = {
    "corpus:kaldi": {"root": "data/kaldi"},
    "corpus:manifest": {"path": "data/manifest.csv"},
    "attacker:dast": {"stage2_anonymizers": [{"use": "mcadams"}]},
    "anonymizer:precomputed": {"folders": ["data/sys"]},
    "attacker:speechbrain": {"source": "exp/asv_orig"},
    "attacker:speechbrain-train": {"source": "exp/asv_orig"},
    "encoder:speechbrain": {"source": "exp/asv_orig"},
    "encoder:campplus": {"source": "exp/campplus_voxceleb.bin"},
    "encoder:eres2net": {"source": "exp/pretrained_eres2net.ckpt"},
    "corpus:vpc": {"root": "data"},
    "frontend:wavlm": {"model": "exp/WavLM-Large.pt"},
    "frontend:hubert": {"model": "exp/hubert"},
    "frontend:wav2vec2": {"model": "exp/wav2vec2"},
    "asr:speechbrain-asr": {"source": "exp/asr"},
    "anonymizer:ssl-sas": {"model": "exp/pretrained_models_anon_xv"},
    "encoder:ssl-sas-ecapa": {"model": "exp/pretrained_models_anon_xv"},
    "anonymizer:stream-voice-anon": {"pool": {"use": "synth"}},
    "attacker:fusion": {"attackers": [{"use": "ecapa"}, {"use": "ge2e"}]},
    "attacker:embedding-view": {"use": "ecapa"},
    "asr:whisper-transformers": {"model_path": "exp/whisper-large-v3"},
}


def test_a_plugin_asks_for_helpers_with_python_values_and_gets_strict_checks(tmp_path):
    """PluginContext.get takes the values plugin code holds (tuples, numpy numbers) in their JSON form, and
    refuses what the helper's own validation refuses with one sentence, not a traceback."""
    import numpy as np

    context = plugin_context(work_dir=tmp_path)
    corpus = context.get("corpus", "synth", {"preset": "tiny", "speakers": np.int64(4), "level_db": (-30.0, -20.0)})
    assert corpus.params.speakers == 4 and corpus.params.level_db == (-30.0, -20.0)
    with pytest.raises(
        ConfigError,
        match=r"the corpus synth was asked for with parameters it refuses \(speakers: Input should be a valid integer",
    ):
        context.get("corpus", "synth", {"speakers": "4"})
