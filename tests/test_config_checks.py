"""The experiment's cross-field rules (vpeval.config_checks): one test per check, with a file that keeps the
rule (no sentence) and one that breaks it (the sentence, with file, line and field)."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from vpeval import config_checks as checks
from vpeval import hookimpl
from vpeval.api import Anonymizer, Attacker, Frontend
from vpeval.config import load_experiment_text, resolve_pieces
from vpeval.config_checks import CHECKS, Pieces
from vpeval.errors import ConfigError
from vpeval.yamlsource import parse_yaml


class EmbeddingOnly(Anonymizer):
    """Moves speaker vectors only."""

    name = "embed-only"
    works_on = ("embedding",)

    def anonymize_embeddings(self, embeddings, voices):
        return -np.asarray(embeddings)


class Stored(Anonymizer):
    """Returns speech stored elsewhere, whatever it is given (as precomputed does)."""

    name = "stored"
    reads_input = False


class TokenReader(Attacker):
    """Reads a speech-token frontend."""

    name = "token-reader"
    uses_frontend = True


class Pretrained(Attacker):
    """Does not train."""

    name = "pretrained"
    needs_training = False


class Picky(Attacker):
    """Refuses to be evaluated on fake-shift (as DAST refuses its Stage II systems)."""

    name = "picky"

    @classmethod
    def check_experiment(cls, params, anonymizers):
        # anonymizers: label -> the plugin names of its chain
        return [
            f"picky must not see {label}; remove it." for label, uses in anonymizers.items() if "fake-shift" in uses
        ]


class NeedsModel(Attacker):
    """Names a model folder that must exist."""

    name = "needs-model"
    needs_training = False

    class Params(Attacker.Params):
        model: str = "model-folder"

    @classmethod
    def missing_paths(cls, params):
        return [] if Path(params.model).is_dir() else [f"the model folder {params.model} does not exist."]


class Tokens(Frontend):
    """A frontend for token-reader."""

    name = "tokens"


@pytest.fixture
def manager(fake_plugins):
    from vpeval.plugins import PluginManager

    module = types.ModuleType("check_plugins")
    hooks = {
        "register_anonymizers": [EmbeddingOnly, Stored],
        "register_attackers": [TokenReader, Pretrained, Picky, NeedsModel],
        "register_frontends": [Tokens],
    }
    for hook, classes in hooks.items():

        def impl(register, classes=classes):
            for cls in classes:
                register(cls)

        impl.__name__ = hook
        setattr(module, hook, hookimpl(impl))
    registry = PluginManager()
    registry.register_module(fake_plugins, "vpeval-fakes", "1.0")
    registry.register_module(module, "vpeval-checks", "1.0")
    assert not registry.broken, registry.broken
    return registry


BASE = """\
name: t
data:
  corpus: fake-corpus
anonymizers:
  - {use: fake-shift}
attackers:
  - {use: fake-spectrum}
metrics: [fake-eer]
"""
SHIFT, SPECTRUM, METRICS = "{use: fake-shift}", "{use: fake-spectrum}", "[fake-eer]"


def pieces(manager, text: str = BASE) -> Pieces:
    """The resolved pieces of `text` (every plugin resolves: what is left to refuse is a cross-field rule)."""
    resolved, errors = resolve_pieces(parse_yaml(text, "exp.yaml"), manager)
    assert errors == [], errors
    return resolved


def edited(*edits: tuple[str, str], text: str = BASE) -> str:
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_every_check_has_its_test_and_resolve_runs_them_all():
    names = [check.__name__ for check in CHECKS]
    assert len(set(names)) == len(names)
    assert [n for n in names if f"test_{n}" not in globals()] == []
    public = [
        name
        for name, value in vars(checks).items()
        if isinstance(value, types.FunctionType)
        and value.__module__ == checks.__name__
        and not name.startswith("_")
        and name != "check_all"
    ]
    assert sorted(public) == sorted(names), "a check function that is not in CHECKS never runs"


def test_paths_exist(manager, tmp_path):
    assert checks.paths_exist(pieces(manager)) == []
    text = edited(("{use: fake-spectrum}", "{use: needs-model, params: {model: /no/such/model}}"))
    (sentence,) = checks.paths_exist(pieces(manager, text))
    assert sentence == "exp.yaml, line 7 (attackers[0].params): the model folder /no/such/model does not exist."
    text = edited(("{use: fake-spectrum}", f"{{use: needs-model, params: {{model: {tmp_path}}}}}"))
    assert checks.paths_exist(pieces(manager, text)) == []
    # `prepare:` says how to make what is missing, once, after the sentences; nothing when nothing is missing
    how = "prepare: '`python make_model.py` writes the model'\n"
    missing = how + edited(("{use: fake-spectrum}", "{use: needs-model, params: {model: /no/such/model}}"))
    assert checks.paths_exist(pieces(manager, missing))[-1] == (
        "exp.yaml, line 1 (prepare): this file's inputs are made outside vpeval: "
        "`python make_model.py` writes the model"
    )
    assert checks.paths_exist(pieces(manager, how + text)) == []


def test_device_available(manager, monkeypatch):
    from vpeval import device

    assert checks.device_available(pieces(manager)) == []
    assert checks.device_available(pieces(manager, BASE + "device: cpu\n")) == []
    monkeypatch.setattr(device, "cuda_device_count", lambda: 0)
    (sentence,) = checks.device_available(pieces(manager, BASE + "device: cuda:1\n"))
    assert sentence.startswith("exp.yaml, line 9") and "needs a CUDA GPU" in sentence


def test_waveform_steps(manager):
    assert checks.waveform_steps(pieces(manager)) == []
    for entry in ("{use: embed-only}", "{chain: [{use: fake-shift}, {use: embed-only}]}"):
        assert checks.waveform_steps(pieces(manager, edited((SHIFT, entry)))) == [
            "exp.yaml, line 5 (anonymizers[0]): anonymizer embed-only works on speaker embeddings only; use it "
            "inside a waveform anonymizer that takes one (for example as its pseudo-speaker selection)."
        ]


def test_stored_speech_first(manager):
    # Before: a chain of fake-shift then precomputed ran, and fake-shift's output was discarded in silence.
    for entry in ("{use: stored}", "{chain: [{use: stored}, {use: fake-shift}]}"):
        assert checks.stored_speech_first(pieces(manager, edited((SHIFT, entry)))) == []
    assert checks.stored_speech_first(
        pieces(manager, edited((SHIFT, "{chain: [{use: fake-shift}, {use: stored}]}")))
    ) == [
        "exp.yaml, line 5 (anonymizers[0].chain[1]): anonymizer stored returns stored speech whatever it is given, so "
        "it would discard what fake-shift made; put it first in the chain."
    ]


def test_frontend_named(manager):
    assert checks.frontend_named(pieces(manager, edited((SPECTRUM, "{use: token-reader, frontend: tokens}")))) == []
    assert checks.frontend_named(pieces(manager, edited((SPECTRUM, "{use: token-reader}")))) == [
        "exp.yaml, line 7 (attackers[0]): attacker token-reader reads a speech-token frontend; "
        "add `frontend: {use: NAME}`."
    ]


def test_frontend_used(manager):
    assert checks.frontend_used(pieces(manager, edited((SPECTRUM, "{use: token-reader, frontend: tokens}")))) == []
    assert checks.frontend_used(pieces(manager, edited((SPECTRUM, "{use: fake-spectrum, frontend: tokens}")))) == [
        "exp.yaml, line 7 (attackers[0].frontend): attacker fake-spectrum does not use a frontend; remove `frontend`."
    ]


def test_pretrained_on_original(manager):
    assert checks.pretrained_on_original(pieces(manager, edited((SPECTRUM, "{use: pretrained}")))) == []
    semi = "{use: fake-spectrum, train_on: semi-informed}"
    assert checks.pretrained_on_original(pieces(manager, edited((SPECTRUM, semi)))) == []
    pretrained_semi = semi.replace("fake-spectrum", "pretrained")
    assert checks.pretrained_on_original(pieces(manager, edited((SPECTRUM, pretrained_semi)))) == [
        "exp.yaml, line 7 (attackers[0].train_on): attacker pretrained is pretrained and does not train; "
        "use train_on: original."
    ]


def test_training_speakers(manager):
    none = ("  corpus: fake-corpus\n", "  corpus: fake-corpus\n  attacker_train_speakers: 0\n")
    assert checks.training_speakers(pieces(manager)) == []
    assert checks.training_speakers(pieces(manager, edited(none, (SPECTRUM, "{use: pretrained}")))) == []
    assert checks.training_speakers(pieces(manager, edited(none))) == [
        "exp.yaml, line 4 (data.attacker_train_speakers): attacker fake-spectrum trains, but attacker_train_speakers "
        "is 0; give a share such as 0.5 or a number of speakers."
    ]


def test_init_from_targets(manager):
    two = edited(
        (SPECTRUM, "{use: fake-spectrum, label: base}\n  - {use: fake-spectrum, label: tuned, init_from: NAME}")
    )

    def sentences(name: str, text: str = two) -> list[str]:
        return checks.init_from_targets(pieces(manager, text.replace("NAME", name)))

    assert sentences("base") == []
    where = "exp.yaml, line 8 (attackers[1].init_from)"
    assert sentences("bsae") == [f"{where}: no other attacker is labelled 'bsae'; did you mean 'base'?"]
    assert sentences("tuned") == [f"{where}: no other attacker is labelled 'tuned'; name another attacker's label."]
    assert sentences("base", two.replace("fake-spectrum, label: base", "fake-inverter, label: base")) == [
        f"{where}: 'base' must be a fake-spectrum attacker trained from scratch to start tuned from it."
    ]


def test_attackers_own_rules(manager):
    alone = "name: t\ndata:\n  corpus: fake-corpus\nprotocols: [O-O]\nattackers: [picky]\nmetrics: [fake-eer]\n"
    assert checks.attackers_own_rules(pieces(manager, alone)) == []
    assert checks.attackers_own_rules(pieces(manager)) == []  # fake-spectrum refuses nothing
    picky = edited((SPECTRUM, "{use: picky}"), (SHIFT, "{use: fake-shift, label: x}"))
    assert checks.attackers_own_rules(pieces(manager, picky)) == [
        "exp.yaml, line 7 (attackers[0].params): picky must not see x; remove it."
    ]


def test_embeddings_recovered(manager):
    cosine = (METRICS, "[fake-eer, fake-cosine]")
    assert checks.embeddings_recovered(pieces(manager, edited(cosine, (SPECTRUM, "{use: fake-inverter}")))) == []
    found = checks.embeddings_recovered(pieces(manager, edited(cosine)))
    assert found == [
        "exp.yaml, line 8 (metrics[1]): metric fake-cosine reads the speaker embeddings that an attacker "
        "recovers from speech (an inversion attacker such as spinv), and no attacker of this experiment "
        "does; add one or remove the metric."
    ]
    assert "seed 002" not in found[0]  # the user's terms, not a paper's


def test_metrics_listed_once(manager):
    def sentences(metrics: str) -> list[str]:
        return checks.metrics_listed_once(pieces(manager, edited((METRICS, metrics))))

    assert sentences("[fake-eer, fake-cosine]") == []
    assert sentences("[fake-eer, {use: fake-eer, label: x}]") == [
        "exp.yaml, line 8 (metrics[1]): metric fake-eer computes what metrics[0] (fake-eer) computes, under another "
        "label; list it once."
    ]
    assert sentences("[fake-eer, fake-eer]") == [
        "exp.yaml, line 8 (metrics[1]): metric fake-eer repeats metrics[0] (fake-eer); list each metric once."
    ]


def test_report_selections(manager):
    def sentences(metric: str, anonymizer: str) -> list[str]:
        report = f"report:\n  tables:\n    - {{title: T, metric: {metric}, where: {{anonymizer: {anonymizer}}}}}\n"
        return checks.report_selections(pieces(manager, BASE + report))

    assert checks.report_selections(pieces(manager)) == []
    assert sentences("fake-eer", "fake-shift") == []
    assert sentences("fake-eer", "fake-shfit") == [
        "exp.yaml, line 11 (report.tables[0].where.anonymizer): this experiment has no anonymizer 'fake-shfit'; "
        "did you mean 'fake-shift'?"
    ]
    assert sentences("eer", "fake-shift") == [
        "exp.yaml, line 11 (report.tables[0].metric): this experiment has no metric 'eer'; use one of: fake-eer."
    ]


def test_labels_distinct(manager):
    assert checks.labels_distinct(pieces(manager, edited((SHIFT, SHIFT + "\n  - {use: fake-shift, label: b}")))) == []
    assert checks.labels_distinct(pieces(manager, edited((SHIFT, SHIFT + "\n  - " + SHIFT)))) == [
        "exp.yaml: two anonymizers are both labelled 'fake-shift'; give one a `label:`."
    ]
    assert checks.labels_distinct(pieces(manager, edited((SPECTRUM, SPECTRUM + "\n  - " + SPECTRUM)))) == [
        "exp.yaml: two attackers are both labelled 'fake-spectrum'; give one a `label:`."
    ]


def test_labels_not_reserved(manager):
    def sentences(label: str) -> list[str]:
        return checks.labels_not_reserved(pieces(manager, edited((SHIFT, f"{{use: fake-shift, label: {label}}}"))))

    assert sentences("originals") == []
    for reserved in ("original", "none"):
        assert sentences(reserved) == [
            f"exp.yaml: an anonymizer is labelled '{reserved}', which results use for "
            "unanonymized speech; give it another `label:`."
        ]


def test_resolve_reports_every_rule_after_the_plugins_that_did_not_resolve(manager):
    text = edited((SHIFT, "{use: fake-shfit}"), (SPECTRUM, "{use: token-reader}"))
    with pytest.raises(ConfigError) as error:
        load_experiment_text(text, "exp.yaml", manager=manager)
    lines = str(error.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("exp.yaml, line 5 (anonymizers[0].use):") and "did you mean 'fake-shift'" in lines[0]
    assert lines[1].startswith("exp.yaml, line 7 (attackers[0]): attacker token-reader reads a speech-token frontend")


def test_a_check_sees_entries_at_their_place_in_the_file(manager):
    """An attacker whose plugin did not resolve keeps its place: the next one's sentence names its own line."""
    text = edited((SPECTRUM, "{use: nothing-here}\n  - {use: fake-spectrum, frontend: tokens}"))
    resolved, errors = resolve_pieces(parse_yaml(text, "exp.yaml"), manager)
    assert len(errors) == 1 and resolved.attackers[0] is None
    assert checks.frontend_used(resolved) == [
        "exp.yaml, line 8 (attackers[1].frontend): attacker fake-spectrum does not use a frontend; remove `frontend`."
    ]
