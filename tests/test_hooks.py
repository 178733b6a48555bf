"""Each hook is documented and tested; these meta-tests fail when one is not."""

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from vpeval import hookimpl, hookspecs
from vpeval.api import (
    ASR,
    Anonymizer,
    Attacker,
    CorpusSource,
    Executor,
    Frontend,
    Metric,
    Report,
    SpeakerEncoder,
    Transcript,
)
from vpeval.plugins import PluginManager
from vpeval.types import Corpus, FrontendOutput, MetricResult

DOCS = Path(__file__).resolve().parents[1] / "docs" / "plugin-hooks.md"


def register_through(hook_name: str, cls) -> PluginManager:
    module = types.ModuleType(f"hook_test_{hook_name}")

    def impl(register):
        register(cls)

    impl.__name__ = hook_name
    setattr(module, hook_name, hookimpl(impl))
    manager = PluginManager()
    manager.register_module(module, "vpeval-hook-test", "0.0")
    assert not manager.broken, manager.broken
    return manager


def test_hook_register_anonymizers():
    class Quiet(Anonymizer):
        """Halves the level."""

        name = "quiet"

        def anonymize(self, audio, sample_rate, voice):
            return audio * 0.5

    cls = register_through("register_anonymizers", Quiet).get("anonymizer", "quiet")
    assert cls is Quiet and cls.distribution == "vpeval-hook-test"


def test_hook_register_attackers():
    class Length(Attacker):
        """Represents by utterance count."""

        name = "length"
        needs_training = False

        def represent(self, utterances):
            return np.array([len(utterances), 1.0])

    assert register_through("register_attackers", Length).get("attacker", "length") is Length


def test_hook_register_frontends():
    class Silence(Frontend):
        """One token per frame."""

        name = "silence"

        def encode(self, audio):
            return FrontendOutput(12.5, tokens=np.zeros((3, 1), dtype=np.int64), codebook_sizes=(1,))

    assert register_through("register_frontends", Silence).get("frontend", "silence") is Silence


def test_hook_register_metrics():
    class One(Metric):
        """Always one."""

        name = "one"

        def compute(self, inputs):
            return [MetricResult("one", 1.0)]

    assert register_through("register_metrics", One).get("metric", "one") is One


def test_hook_register_encoders():
    class Mean(SpeakerEncoder):
        """Mean sample."""

        name = "mean"
        dim = 1

        def embed(self, audio):
            return np.array([audio.mean()])

    assert register_through("register_encoders", Mean).get("encoder", "mean") is Mean


def test_hook_register_asr():
    class Deaf(ASR):
        """Hears nothing."""

        name = "deaf"

        def transcribe(self, audio):
            return Transcript("")

    assert register_through("register_asr", Deaf).get("asr", "deaf") is Deaf


def test_hook_register_corpora():
    class Empty(CorpusSource):
        """No speech."""

        name = "empty"

        def load(self):
            return Corpus("empty", [])

    assert register_through("register_corpora", Empty).get("corpus", "empty") is Empty


def test_hook_register_executors():
    class Serial(Executor):
        """One item after another, in this process."""

        name = "serial"

        def map(self, func, items, description=""):
            return (func(item) for item in items)

    manager = register_through("register_executors", Serial)
    assert manager.get("executor", "serial") is Serial
    assert list(Serial().map(lambda x: x * 2, [1, 2, 3])) == [2, 4, 6]


def test_hook_register_reports(tmp_path):
    class Counts(Report):
        """How many result rows each metric has, as one Markdown table."""

        name = "counts"

        def table(self, folders, fmt, options):
            return "| metric | rows |\n|---|---:|\n" if fmt == "md" else None

    manager = register_through("register_reports", Counts)
    assert manager.get("report", "counts") is Counts
    assert Counts().table([tmp_path], "md", {}).startswith("| metric |")
    assert Counts().table([tmp_path], "latex", {}) is None and Counts().figures([], tmp_path) == []


HOOKS = sorted(hookspecs.HOOK_KINDS)


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_documented(hook):
    text = DOCS.read_text()
    section = re.search(rf"^## {hook}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert section, f"docs/plugin-hooks.md has no section for {hook}"
    assert f"def {hook}(register)" in section.group(1), f"the {hook} section lacks its signature"
    assert section.group(1).count("```python") >= 2, f"the {hook} section lacks an example"
    assert getattr(hookspecs, hook).__doc__, f"{hook} has no docstring"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_has_a_test(hook):
    assert hasattr(sys.modules[__name__], f"test_hook_{hook}"), f"no test_hook_{hook} in {__file__}"


def test_hook_kinds_cover_the_hookspecs():
    specs = {name for name in dir(hookspecs) if name.startswith("register_")}
    assert specs == set(hookspecs.HOOK_KINDS)


def test_hooks_are_called_through_pluggy_with_argument_subsetting():
    """An implementation declares the hook arguments it uses; one written before `core_version` existed
    (only `register`) keeps working next to one that reads it."""
    from vpeval.registry import core_version

    class Old(Metric):
        """Registered by an old-style hook."""

        name = "old-style"

        def compute(self, inputs):
            return [MetricResult("old-style", 0.0)]

    class New(CorpusSource):
        """Registered by a hook that reads core_version."""

        name = "new-style"

    seen = {}
    module = types.ModuleType("two_styles")

    def register_metrics(register):
        register(Old)

    def register_corpora(register, core_version):
        seen["core_version"] = core_version
        register(New)

    module.register_metrics = hookimpl(register_metrics)
    module.register_corpora = hookimpl(register_corpora)
    manager = PluginManager()
    manager.register_module(module, "vpeval-two-styles", "1.0")
    assert not manager.broken, manager.broken
    assert manager.get("metric", "old-style") is Old and manager.get("corpus", "new-style") is New
    assert seen["core_version"] == core_version()
    assert Old.distribution == New.distribution == "vpeval-two-styles"


def test_classes_keep_the_distribution_of_the_module_that_registered_them():
    """Hooks run per registered module, so each class is attributed to its own distribution."""
    first, second = (
        register_through("register_asr", type(n, (ASR,), {"__doc__": "x", "name": n})) for n in ("asr-one", "asr-two")
    )
    manager = PluginManager()
    for name, dist in (("asr-three", "vpeval-three"), ("asr-four", "vpeval-four")):
        module = types.ModuleType(f"attribution_{dist}")
        cls = type(name, (ASR,), {"__doc__": "x", "name": name})
        module.register_asr = hookimpl(lambda register, _cls=cls: register(_cls))
        module.register_asr.__name__ = "register_asr"
        manager.register_module(module, dist, "1.0")
    assert manager.registry["asr"]["asr-three"].distribution == "vpeval-three"
    assert manager.registry["asr"]["asr-four"].distribution == "vpeval-four"
    assert (
        first.registry["asr"]["asr-one"].distribution
        == second.registry["asr"]["asr-two"].distribution
        == "vpeval-hook-test"
    )


def test_every_hook_argument_is_documented():
    text = DOCS.read_text()
    for hook in HOOKS:
        for argument in getattr(hookspecs, hook).__code__.co_varnames:
            assert f"`{argument}`" in text, f"docs/plugin-hooks.md does not mention the {hook} argument {argument}"
