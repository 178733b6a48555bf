"""The experiment file's cross-field rules, one named check each.

`vpeval.config.resolve` validates the schema and each plugin's own params first, then runs every check
in CHECKS on the resolved pieces (vpeval.schema's types: the checks import the schema, never the
reverse). A check returns sentences, each starting with the file, line and field it is about (empty: the
rule holds); a new rule is one more function here and one more entry.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vpeval.api import Attacker, Metric
from vpeval.device import cpu_bf16_problem, device_problem, resolve_device
from vpeval.params import validate_params
from vpeval.references import named_plugins
from vpeval.schema import Experiment, ResolvedAnonymizer, ResolvedAttacker, ResolvedPlugin
from vpeval.yamlsource import YamlDocument

RESERVED_LABELS = ("none", "original")  # results and data/evaluation_original use these for unanonymized speech


@dataclass(frozen=True)
class Pieces:
    """What the checks read: the file, its schema-validated form and the plugins it resolved to
    (vpeval.config.resolve_pieces).

        The lists run parallel to the file's `anonymizers`, `attackers` and `metrics`, so an index is the
        entry's place in the file; None marks an entry whose plugin did not resolve (that has its sentence).
    """

    doc: YamlDocument
    exp: Experiment
    manager: Any  # the plugin manager the plugins came from
    anonymizers: list[ResolvedAnonymizer | None]
    attackers: list[ResolvedAttacker | None]
    metrics: list[ResolvedPlugin | None]
    corpus: ResolvedPlugin | None = None
    executor: ResolvedPlugin | None = None

    def attacker_class(self, attacker: ResolvedAttacker) -> type[Attacker]:
        return self.manager.get("attacker", attacker.plugin.use)

    def metric_class(self, metric: ResolvedPlugin) -> type[Metric]:
        return self.manager.get("metric", metric.use)

    def resolved_attackers(self) -> list[tuple[int, ResolvedAttacker]]:
        return [(i, a) for i, a in enumerate(self.attackers) if a is not None]


Check = Callable[[Pieces], list[str]]


def waveform_steps(p: Pieces) -> list[str]:
    """Every step of an anonymizer (or its chain) transforms waveforms: an embedding-only one cannot run alone."""
    errors = []
    for i, anon in enumerate(p.anonymizers):
        for step in anon.steps if anon is not None else []:
            if "waveform" not in p.manager.get("anonymizer", step.use).works_on:
                errors.append(
                    f"{p.doc.where(('anonymizers', i))}: anonymizer {step.use} works on speaker embeddings "
                    "only; use it inside a waveform anonymizer that takes one (for example as its "
                    "pseudo-speaker selection)."
                )
    return errors


def stored_speech_first(p: Pieces) -> list[str]:
    """A step that does not read its input (Anonymizer.reads_input) starts its chain, or discards what came before."""
    errors = []
    for i, anon in enumerate(p.anonymizers):
        steps = anon.steps if anon is not None else []
        for j, step in enumerate(steps[1:], start=1):
            if not p.manager.get("anonymizer", step.use).reads_input:
                errors.append(
                    f"{p.doc.where(('anonymizers', i, 'chain', j))}: anonymizer {step.use} returns stored "
                    f"speech whatever it is given, so it would discard what {steps[j - 1].use} made; put it first in "
                    "the chain."
                )
    return errors


def frontend_named(p: Pieces) -> list[str]:
    """An attacker that reads a speech-token frontend has one."""
    return [
        f"{p.doc.where(('attackers', i))}: attacker {a.plugin.use} reads a speech-token frontend; "
        "add `frontend: {use: NAME}`."
        for i, a in p.resolved_attackers()
        if p.attacker_class(a).uses_frontend and p.exp.attackers[i].frontend is None
    ]


def frontend_used(p: Pieces) -> list[str]:
    """An attacker that reads no frontend is given none."""
    return [
        f"{p.doc.where(('attackers', i, 'frontend'))}: attacker {a.plugin.use} does not use a frontend; "
        "remove `frontend`."
        for i, a in p.resolved_attackers()
        if not p.attacker_class(a).uses_frontend and p.exp.attackers[i].frontend is not None
    ]


def pretrained_on_original(p: Pieces) -> list[str]:
    """A pretrained attacker does not train, so it cannot train on anonymized speech."""
    return [
        f"{p.doc.where(('attackers', i, 'train_on'))}: attacker {a.plugin.use} is pretrained and does not train; "
        "use train_on: original."
        for i, a in p.resolved_attackers()
        if a.train_on == "anonymized" and not p.attacker_class(a).needs_training
    ]


def training_speakers(p: Pieces) -> list[str]:
    """An attacker that trains gets attacker-train speakers."""
    trained = [a.plugin.use for _, a in p.resolved_attackers() if p.attacker_class(a).needs_training]
    if trained and p.exp.data.attacker_train_speakers == 0:
        return [
            f"{p.doc.where(('data', 'attacker_train_speakers'))}: attacker {trained[0]} trains, but "
            "attacker_train_speakers is 0; give a share such as 0.5 or a number of speakers."
        ]
    return []


def init_from_targets(p: Pieces) -> list[str]:
    """`init_from` names another attacker's label, of the same plugin, trained from scratch."""
    attackers = p.resolved_attackers()
    by_label = {a.label: a for _, a in attackers}
    errors = []
    for i, a in attackers:
        if a.init_from is None:
            continue
        ref = by_label.get(a.init_from)
        where = p.doc.where(("attackers", i, "init_from"))
        if ref is None or ref is a:
            close = difflib.get_close_matches(a.init_from, [b.label for _, b in attackers if b is not a], n=1)
            hint = f"; did you mean '{close[0]}'?" if close else "; name another attacker's label."
            errors.append(f"{where}: no other attacker is labelled '{a.init_from}'" + hint)
        elif ref.plugin.use != a.plugin.use or ref.init_from is not None:
            errors.append(
                f"{where}: '{a.init_from}' must be a {a.plugin.use} attacker trained from scratch to start "
                f"{a.label} from it."
            )
    return errors


def attackers_own_rules(p: Pieces) -> list[str]:
    """What each attacker class refuses in the whole experiment (Attacker.check_experiment), e.g. DAST's
    rule that its Stage II systems are not the ones it is evaluated on."""
    targets = {an.label: [s.use for s in an.steps] for an in p.anonymizers if an is not None}
    return [
        f"{p.doc.where(('attackers', i, 'params'))}: {sentence}"
        for i, a in p.resolved_attackers()
        for sentence in p.attacker_class(a).check_experiment(a.plugin.params, targets)
    ]


def embeddings_recovered(p: Pieces) -> list[str]:
    """A metric that reads recovered embeddings has an attacker that recovers them."""
    if any(p.attacker_class(a).recovers_embeddings() for _, a in p.resolved_attackers()):
        return []
    return [
        f"{p.doc.where(('metrics', i))}: metric {m.use} reads the speaker embeddings that an attacker recovers "
        "from speech (an inversion attacker such as spinv), and no attacker of this experiment does; add one or "
        "remove the metric."
        for i, m in enumerate(p.metrics)
        if m is not None and p.metric_class(m).needs == "embeddings"
    ]


def metrics_listed_once(p: Pieces) -> list[str]:
    """A metric listed twice (the same plugin and params, or the same label) would compute twice and give
    rows no table can tell apart; the runner also keeps one instance per label."""
    errors = []
    metrics = p.metrics
    for i, m in enumerate(metrics):
        earlier = next(
            (
                j
                for j, o in enumerate(metrics[:i])
                if o is not None and m is not None and (o.label == m.label or (o.use, o.params) == (m.use, m.params))
            ),
            None,
        )
        if earlier is None:
            continue
        other = metrics[earlier]
        if other.label != m.label:
            why = f"computes what metrics[{earlier}] ({other.label}) computes, under another label; list it once."
        elif (other.use, other.params) == (m.use, m.params):
            why = f"repeats metrics[{earlier}] ({m.label}); list each metric once."
        else:
            why = f"and metrics[{earlier}] are both labelled '{m.label}'; give one of them another `label:`."
        errors.append(f"{p.doc.where(('metrics', i))}: metric {m.use} {why}")
    return errors


def report_selections(p: Pieces) -> list[str]:
    """Every metric, label, protocol, N and scenario the `report:` section selects exists in this experiment,
    so a typo is caught at `vpeval validate` rather than printed as an empty table after the run. Metric
    names are the result names the metrics report (Metric.result_names), checked only when all resolved."""
    exp = p.exp
    if exp.report is None:
        return []
    metrics = None if None in p.metrics else [n for m in p.metrics for n in p.metric_class(m).result_names()]
    known = {
        "anonymizer": [*_labels(p.anonymizers), "original"],
        "attacker": _labels(p.attackers),
        "protocol": list(exp.protocols),
        "n": [str(n) for n in exp.enroll_utterances],
        "scenario": ["original", "anonymized"],
        "gender": ["f", "m", "avg", "all"],
        "metric": list(dict.fromkeys(metrics or [])),
    }
    errors = []
    for loc, dim, values in exp.report.selections():
        if (dim == "metric" and metrics is None) or dim == "dataset":
            continue
        for value in values:
            if value not in known[dim]:
                close = difflib.get_close_matches(value, known[dim], n=1)
                hint = f"did you mean '{close[0]}'?" if close else f"use one of: {', '.join(known[dim]) or 'none'}."
                errors.append(f"{p.doc.where(('report',) + loc)}: this experiment has no {dim} '{value}'; {hint}")
    return errors


def labels_distinct(p: Pieces) -> list[str]:
    """No two anonymizers, and no two attackers, share a label: results and the cache tell them apart by it."""
    errors = []
    for kind, names in (("anonymizer", _labels(p.anonymizers)), ("attacker", _labels(p.attackers))):
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            errors.append(f"{p.doc.path}: two {kind}s are both labelled '{sorted(dup)[0]}'; give one a `label:`.")
    return errors


def labels_not_reserved(p: Pieces) -> list[str]:
    """No anonymizer takes a label that results use for unanonymized speech."""
    return [
        f"{p.doc.path}: an anonymizer is labelled '{reserved}', which results use for unanonymized speech; "
        "give it another `label:`."
        for reserved in sorted(set(RESERVED_LABELS) & set(_labels(p.anonymizers)))
    ]


def _labels(entries: list) -> list[str]:
    return [e.label for e in entries if e is not None]


def paths_exist(p: Pieces) -> list[str]:
    """The files and folders each plugin's params name exist (Plugin.missing_paths): data roots, model
    folders, checkpoints; one sentence each, at the plugin's params, before anything loads."""
    errors, seen = [], set()
    for loc, plugin in _plugins_with_locations(p):
        cls = p.manager.get(plugin.kind, plugin.use)
        params = cls.Params.model_validate(plugin.params)
        where = p.doc.where(loc + ("params",))
        found = [(where, sentence) for sentence in cls.missing_paths(params)]
        for kind, name, nested in named_plugins(p.manager, params):  # helpers: an ASR, an encoder, ...
            helper = p.manager.get(kind, name)
            found += [(f"{where} ({kind} {name})", s) for s in helper.missing_paths(validate_params(helper, nested))]
        # a folder that several plugins name is one sentence, at its first use
        errors += [f"{at}: {sentence}" for at, sentence in found if not (sentence in seen or seen.add(sentence))]
    if errors and p.exp.prepare:
        errors.append(f"{p.doc.where(('prepare',))}: this file's inputs are made outside vpeval: {p.exp.prepare}")
    return errors


def _plugins_with_locations(p: Pieces):
    if p.corpus is not None:
        yield ("data", "corpus"), p.corpus
    for i, anon in enumerate(p.anonymizers):
        steps = anon.steps if anon is not None else []
        chained = p.exp.anonymizers[i].chain is not None
        for j, step in enumerate(steps):
            yield (("anonymizers", i, "chain", j) if chained else ("anonymizers", i)), step
    for i, attacker in p.resolved_attackers():
        yield ("attackers", i), attacker.plugin
        if attacker.frontend is not None:
            yield ("attackers", i, "frontend"), attacker.frontend
    for i, metric in enumerate(p.metrics):
        if metric is not None:
            yield ("metrics", i), metric


def device_available(p: Pieces) -> list[str]:
    """The experiment's `device` exists on this machine (`auto` always does), and so does `cpu_precision: bf16`."""
    where, problem = ("device",), device_problem(p.exp.device)
    if not problem and p.exp.cpu_precision == "bf16" and resolve_device(p.exp.device) == "cpu":
        where, problem = ("cpu_precision",), cpu_bf16_problem()
    return [f"{p.doc.where(where)}: {problem}"] if problem else []


CHECKS: list[Check] = [
    device_available,
    paths_exist,
    waveform_steps,
    stored_speech_first,
    frontend_named,
    frontend_used,
    pretrained_on_original,
    training_speakers,
    init_from_targets,
    attackers_own_rules,
    embeddings_recovered,
    metrics_listed_once,
    report_selections,
    labels_distinct,
    labels_not_reserved,
]


def check_all(pieces: Pieces) -> list[str]:
    """The sentences of every check, in CHECKS order."""
    return [sentence for check in CHECKS for sentence in check(pieces)]
