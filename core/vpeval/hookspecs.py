"""The hooks a vpeval plugin implements, one per plugin kind.

Each hook receives a `register` callback; the plugin calls `register(SomeClass)` once per class it
provides. The core owns names, duplicates and validation, so a plugin only says what it provides.
Hooks also receive `core_version` (the installed vpeval version). pluggy passes an implementation only
the arguments it declares, so `def register_metrics(register)` is a complete implementation, and a
plugin written before a hook gained an argument keeps working.
Every hook here is documented in docs/plugin-hooks.md and exercised by a test (tests/test_hooks_meta.py
checks both).
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("vpeval")
hookimpl = pluggy.HookimplMarker("vpeval")


@hookspec
def register_anonymizers(register, core_version):
    """Register anonymizer classes (subclasses of `vpeval.api.Anonymizer`).

    An anonymizer turns a waveform into an anonymized waveform (`anonymize`) and, if it works in
    speaker-embedding space, original vectors into pseudo-speaker vectors (`anonymize_embeddings`).

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_attackers(register, core_version):
    """Register attacker classes (subclasses of `vpeval.api.Attacker`).

    An attacker trains on staged training data, represents a set of utterances as one vector and
    scores pairs of representations.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_frontends(register, core_version):
    """Register speech-token frontend classes (subclasses of `vpeval.api.Frontend`).

    A frontend encodes a waveform into discrete tokens [frames, codebooks] and/or continuous
    features [frames, dim], as a speech language model's input interface does.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_metrics(register, core_version):
    """Register metric classes (subclasses of `vpeval.api.Metric`).

    A metric turns scores, speech or embeddings into `MetricResult` numbers with confidence
    intervals where they apply.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_encoders(register, core_version):
    """Register speaker encoder classes (subclasses of `vpeval.api.SpeakerEncoder`).

    Speaker encoders are shared: anonymizers choose pseudo-speakers with them, metrics compare
    speakers with them, attackers may wrap them.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_asr(register, core_version):
    """Register speech recognizer classes (subclasses of `vpeval.api.ASR`).

    Used by the WER metric and by attackers that read transcripts or word timings.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_corpora(register, core_version):
    """Register corpus source classes (subclasses of `vpeval.api.CorpusSource`).

    A corpus source yields a `Corpus`: utterances with speaker, gender, transcript and emotion.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_executors(register, core_version):
    """Register executor classes (subclasses of `vpeval.api.Executor`).

    An executor runs per-item work (anonymizing utterances) on this machine's processes or on a cluster;
    the experiment picks one with `executor: {use: NAME, params: {...}}`. Results must not depend on it.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


@hookspec
def register_reports(register, core_version):
    """Register report classes (subclasses of `vpeval.api.Report`).

    A report plugin computes the experiment's declared `report:` section (tables, curves, findings) for
    report.md and draws tables across run folders for `vpeval report --format`.

    :param register: call `register(cls)` for each class.
    :param core_version: the installed vpeval version (declare it only if the plugin needs it).
    """


# Which kind each hook registers; the plugin manager checks registered classes against it.
HOOK_KINDS = {
    "register_anonymizers": "anonymizer",
    "register_attackers": "attacker",
    "register_frontends": "frontend",
    "register_metrics": "metric",
    "register_encoders": "encoder",
    "register_asr": "asr",
    "register_corpora": "corpus",
    "register_executors": "executor",
    "register_reports": "report",
}
