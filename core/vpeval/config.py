"""The experiment file read and resolved: validation with file-and-line errors, each named plugin found
and its params checked, then the cross-field rules.

Validation runs completely before anything loads: first the core schema (vpeval.schema), then each named
plugin's `Params` (vpeval.params), then the checks (vpeval.config_checks). Nothing here imports a
plugin's heavy dependencies.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from vpeval.api import PluginRef
from vpeval.codehash import code_fingerprint, referenced_code
from vpeval.config_checks import Pieces, check_all
from vpeval.device import effective_precision, kernel_settings, numerics_identity, resolve_device
from vpeval.errors import ConfigError, PluginError
from vpeval.params import round_trip_problem, validate_params
from vpeval.references import MAX_NESTING, models_in, reference_target
from vpeval.registry import get_plugin_manager

# The resolved types are the run's input; vpeval.run and scripts import them from here as well.
from vpeval.schema import (
    AttackerSpec,
    Experiment,
    PluginSpec,
    ResolvedAnonymizer,
    ResolvedAttacker,
    ResolvedExperiment,
    ResolvedPlugin,
    table_breaking,
)
from vpeval.variables import substitute_variables
from vpeval.yamlsource import Loc, YamlDocument, format_loc, load_yaml, parse_yaml


def load_experiment(path: str | Path, manager=None, variables: dict[str, str] | None = None) -> ResolvedExperiment:
    """Read, validate and resolve an experiment file; raise ConfigError with file and line.

    `variables` are the command line's `--var NAME=VALUE` for the file's `variables:` (vpeval.variables)."""
    doc = load_yaml(path)
    substitute_variables(doc, variables)
    return resolve(doc, manager)


def load_experiment_text(
    text: str, name: str = "<string>", manager=None, variables: dict[str, str] | None = None
) -> ResolvedExperiment:
    doc = parse_yaml(text, name)
    substitute_variables(doc, variables)
    return resolve(doc, manager)


def resolve(doc: YamlDocument, manager=None) -> ResolvedExperiment:
    """The experiment of `doc`, its plugins resolved and every rule checked; ConfigError lists what is wrong."""
    pieces, errors = resolve_pieces(doc, manager)
    errors.extend(check_all(pieces))  # the cross-field rules, vpeval.config_checks
    if errors:
        raise ConfigError(error_lines(errors, doc.path))
    assert pieces.corpus is not None
    return ResolvedExperiment(
        source=doc.path,
        experiment=pieces.exp,
        corpus=pieces.corpus,
        anonymizers=[a for a in pieces.anonymizers if a is not None],
        attackers=[a for a in pieces.attackers if a is not None],
        metrics=[m for m in pieces.metrics if m is not None],
        executor=pieces.executor,
    )


def resolve_pieces(doc: YamlDocument, manager=None) -> tuple[Pieces, list[str]]:
    """The schema-validated experiment and each plugin it names, resolved with its params validated (what
    the cross-field checks read), and a sentence for each plugin that did not resolve.

    A schema error, or a number in `data` that is not finite, raises ConfigError at once.
    """
    if not isinstance(doc.data, dict):
        raise ConfigError(
            f"{doc.path}, line 1: an experiment file is a mapping with keys such as name, data, attackers."
        )
    try:
        exp = Experiment.model_validate(doc.data)
    except ValidationError as exc:
        raise ConfigError(_schema_message(doc, exc)) from None

    if manager is None:
        manager = get_plugin_manager()

    non_finite = _non_finite(doc, doc.data.get("data"), ("data",))
    if non_finite:
        raise ConfigError(error_lines(non_finite, doc.path))
    errors: list[str] = []
    device = resolve_device(exp.device)
    numerics = numerics_identity(device, effective_precision(device, exp.precision, exp.cpu_precision))
    plugin = functools.partial(_resolve_plugin, manager, doc, errors, numerics=numerics)

    corpus = plugin("corpus", exp.data.corpus, ("data", "corpus"))
    anonymizers: list[ResolvedAnonymizer | None] = []  # one per entry of the file; None: a step did not resolve
    for i, spec in enumerate(exp.anonymizers):
        steps = []
        if spec.chain is not None:
            for j, step in enumerate(spec.chain):
                steps.append(plugin("anonymizer", step, ("anonymizers", i, "chain", j)))
        else:
            steps.append(plugin("anonymizer", PluginSpec(use=spec.use or "", params=spec.params), ("anonymizers", i)))
        resolved_anon = None
        if all(steps):
            label = spec.label or "+".join(s.label for s in steps) + ("" if spec.level == "utterance" else "@speaker")
            resolved_anon = ResolvedAnonymizer(label=label, level=spec.level, steps=steps)
        anonymizers.append(resolved_anon)
    attackers: list[ResolvedAttacker | None] = []  # one per entry of the file; None: its plugin did not resolve
    for i, spec in enumerate(exp.attackers):
        resolved = plugin("attacker", spec, ("attackers", i))
        frontend = plugin("frontend", spec.frontend, ("attackers", i, "frontend")) if spec.frontend else None
        if resolved is None:
            attackers.append(None)
            continue
        cls = manager.get("attacker", spec.use)
        label = spec.label
        if label is None:
            label = resolved.label + (f"[{frontend.label}]" if frontend else "")
            label += "" if spec.train_on == "original" or not cls.needs_training else "/semi-informed"
        attackers.append(
            ResolvedAttacker(
                label=label, plugin=resolved, train_on=spec.train_on, frontend=frontend, init_from=spec.init_from
            )
        )
    metrics = [plugin("metric", m, ("metrics", i)) for i, m in enumerate(exp.metrics)]
    executor = plugin("executor", exp.executor, ("executor",)) if exp.executor is not None else None

    return Pieces(doc, exp, manager, anonymizers, attackers, metrics, corpus, executor), errors


def _resolve_plugin(
    manager,
    doc: YamlDocument,
    errors: list[str],
    kind: str,
    spec: PluginSpec | AttackerSpec,
    loc: Loc,
    numerics: dict[str, str] | None = None,
) -> ResolvedPlugin | None:
    """The plugin `spec` names, its params validated (and those of the plugins they name); None, and the
    sentences in `errors`, when it is not installed, not the recorded version, or its params are refused."""
    use, params = spec.use, spec.params
    try:
        cls = manager.get(kind, use)
    except PluginError as exc:
        errors.append(f"{doc.where(loc + ('use',))}: {exc}")
        return None
    recorded = getattr(spec, "distribution", None), getattr(spec, "version", None)
    if any(r is not None and r != now for r, now in zip(recorded, (cls.distribution, cls.version))):
        errors.append(
            f"{doc.where(loc + ('version',))}: {kind} {use} came from {' '.join(r for r in recorded if r)} "
            f"when this file was written, and {cls.distribution} {cls.version} is installed; install that "
            "version, or delete `distribution` and `version` to run with the installed one."
        )
        return None
    try:
        validated = validate_params(cls, params)
    except ValidationError as exc:
        for err in exc.errors():
            sub = loc + ("params",) + tuple(err["loc"])
            errors.append(f"{doc.where(sub)}: {_pydantic_sentence(err, f'{kind} {use}')}")
        return None
    before, named = len(errors), []
    check_references(manager, doc, validated, loc + ("params",), f"{kind} {use}", errors, named=named)
    if len(errors) > before or _round_trip_refused(doc, cls, validated, loc + ("params",), f"{kind} {use}", errors):
        return None
    label = getattr(spec, "label", None) or default_label(use, params)
    sensitive = any(c.device_sensitive for c in (cls, *named))
    return ResolvedPlugin(
        kind=kind,
        use=use,
        params=validated.model_dump(mode="json"),
        distribution=cls.distribution,
        version=cls.version,
        label=label,
        code=code_fingerprint(cls),
        helpers=referenced_code(cls, named),
        # kernel pins (numpy's BLAS) for the others too, but a corpus: its content is its key (the fingerprint)
        numerics=(numerics or {}) if sensitive else {} if kind == "corpus" else kernel_settings(),
    )


# -- nested plugin references (PluginRef fields of plugin params) -----------------------------------


def check_references(
    manager,
    doc: YamlDocument,
    params: BaseModel,
    loc: Loc,
    owner: str,
    errors: list[str],
    depth: int = 0,
    owner_loc: Loc | None = None,
    named: list[type] | None = None,
) -> None:
    """Check every plugin that `params` names through a PluginRef field (and what those name, in turn).

    Unknown names get the nearest installed name (or built-in keyword); the named plugin's params are
    validated with its own Params; every sentence carries the file and line of the nested field. The
    classes of the plugins named are appended to `named` (their code joins the owner's cache identity).
    """
    owner_loc = loc if owner_loc is None else owner_loc
    if depth > MAX_NESTING:
        errors.append(
            f"{doc.where(loc)}: plugins name each other more than {MAX_NESTING} levels deep; {owner} "
            "probably names itself."
        )
        return
    for field_name, info in type(params).model_fields.items():
        value = getattr(params, field_name)
        ref = next((m for m in info.metadata if isinstance(m, PluginRef)), None)
        if ref is not None:
            _check_reference(manager, doc, ref, params, field_name, loc, owner, owner_loc, errors, depth, named)
        for sub_loc, model in models_in(value, loc + (field_name,)):
            check_references(manager, doc, model, sub_loc, owner, errors, depth, owner_loc, named)


def _check_reference(
    manager,
    doc,
    ref: PluginRef,
    params: BaseModel,
    field_name: str,
    loc: Loc,
    owner: str,
    owner_loc: Loc,
    errors: list[str],
    depth: int,
    named: list[type] | None,
) -> None:
    value = getattr(params, field_name)
    shown = format_loc((loc + (field_name,))[len(owner_loc) :])  # as the user wrote it, e.g. pool.use
    name, nested, name_loc, params_loc = reference_target(ref, params, field_name, loc)
    if name is None and ref.name is None and isinstance(value, (BaseModel, dict)):
        errors.append(f"{doc.where(loc + (field_name,))}: {owner} field '{shown}' needs `use: <{ref.kind} plugin>`.")
        return
    if name is None or name in ref.keywords:
        return
    if not isinstance(name, str):
        errors.append(
            f"{doc.where(name_loc)}: {owner} field '{shown}' names a {ref.kind} plugin; give its name, got {name!r}."
        )
        return
    try:
        cls = manager.get(ref.kind, name)
    except PluginError as exc:
        unknown = (
            ref.keywords
            and name not in manager.names(ref.kind)
            and (ref.kind, name) not in getattr(manager, "conflicts", {})
        )
        reason = _unknown_reference(manager, ref, name) if unknown else str(exc)
        errors.append(f"{doc.where(name_loc)}: {owner} field '{shown}': {reason}")
        return
    if ref.works_on and ref.works_on not in getattr(cls, "works_on", ()):
        article = "an" if ref.kind[0] in "aeiou" else "a"
        errors.append(
            f"{doc.where(name_loc)}: {owner} field '{shown}' needs {article} {ref.kind} that works on "
            f"{ref.works_on}s, and {name} works on {' and '.join(cls.works_on)}s only."
        )
        return
    if isinstance(nested, BaseModel):
        nested = nested.model_dump(mode="json")
    if not isinstance(nested, dict):
        shown_value = repr(nested) if len(repr(nested)) <= 40 else repr(nested)[:37] + "..."
        errors.append(
            f"{doc.where(params_loc)}: the params of {ref.kind} {name} are a mapping of parameter names to "
            f"values, such as {{epochs: 2}}; got {shown_value}."
        )
        return
    try:
        validated = validate_params(cls, nested)
    except ValidationError as exc:
        for err in exc.errors():
            errors.append(
                f"{doc.where(params_loc + tuple(err['loc']))}: {_pydantic_sentence(err, f'{ref.kind} {name}')}"
            )
        return
    if named is not None:
        named.append(cls)
    before = len(errors)
    check_references(manager, doc, validated, params_loc, f"{ref.kind} {name}", errors, depth + 1, params_loc, named)
    if len(errors) == before:
        _round_trip_refused(doc, cls, validated, params_loc, f"{ref.kind} {name}", errors)


def _round_trip_refused(
    doc: YamlDocument, cls: type, validated: BaseModel, loc: Loc, owner: str, errors: list[str]
) -> bool:
    """True (and a sentence in `errors`) when the plugin cannot read back the params it validated: the
    runner builds it from their dump, so it would fail at its first stage. A bug in the plugin."""
    problem = round_trip_problem(cls, validated)
    if problem is None:
        return False
    errors.append(
        f"{doc.where(loc)}: {owner} accepts these parameters, but {problem}, so a run could not build it; "
        f"this is a bug in {cls.distribution} {cls.version}: report it to its authors."
    )
    return True


def _unknown_reference(manager, ref: PluginRef, name: str) -> str:
    if not ref.keywords:
        return manager.unknown_message(ref.kind, name)
    choices = ", ".join(f"'{k}'" for k in ref.keywords)
    close = difflib.get_close_matches(name, [*ref.keywords, *manager.names(ref.kind)], n=1, cutoff=0.5)
    hint = (
        f"did you mean '{close[0]}'?"
        if close
        else f"installed {ref.kind} plugins: {', '.join(manager.names(ref.kind)) or 'none'}."
    )
    return f"'{name}' is neither {choices} nor an installed {ref.kind} plugin; {hint}"


def _non_finite(doc: YamlDocument, value: Any, loc: Loc) -> list[str]:
    """Sentences for NaN or infinite numbers anywhere under `loc` (no data setting is meaningful with one)."""
    if isinstance(value, float) and not math.isfinite(value):
        return [f"{doc.where(loc)}: {value} is not a usable number here; write a finite number."]
    if isinstance(value, dict):
        return [e for key, item in value.items() for e in _non_finite(doc, item, loc + (key,))]
    if isinstance(value, list):
        return [e for i, item in enumerate(value) for e in _non_finite(doc, item, loc + (i,))]
    return []


def default_label(use: str, params: dict[str, Any]) -> str:
    if not params:
        return use
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:6]

    def shown(v: Any) -> str | None:
        if isinstance(v, (int, float, str, bool)):
            return str(v)
        if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float, str, bool)) for x in v):
            return ":".join(map(str, v))
        return None

    parts = [(k, shown(v)) for k, v in params.items()]
    short = ",".join(f"{k}={v}" for k, v in parts if v is not None)
    complete = all(v is not None for _, v in parts) and table_breaking(short) is None  # a value with '|' or a newline
    return f"{use}({short})" if complete and len(short) <= 40 else f"{use}#{digest}"


MAX_ERROR_LINES = 20  # a generated file can hold 100,000 wrong values: show the first ones, count the rest


def error_lines(lines: list[str], path: str) -> str:
    """The error sentences, one per line, at most MAX_ERROR_LINES of them and a count of the others."""
    if len(lines) <= MAX_ERROR_LINES:
        return "\n".join(lines)
    rest = len(lines) - MAX_ERROR_LINES
    return "\n".join(
        lines[:MAX_ERROR_LINES] + [f"{path}: ... and {rest} more errors; fix the ones above and validate again."]
    )


def _schema_message(doc: YamlDocument, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and ("[" in p or p.startswith("function-"))))
        lines.append(f"{doc.where(loc)}: {_pydantic_sentence(err, 'experiment', schema=Experiment, loc=loc)}")
    return error_lines(list(dict.fromkeys(lines)), doc.path)


def _pydantic_sentence(err: dict, owner: str, schema=None, loc: Loc = ()) -> str:
    kind = err["type"]
    field = format_loc(tuple(err["loc"])) or "value"
    if kind == "extra_forbidden":
        known = _known_fields(schema, loc[:-1]) if schema else []
        close = difflib.get_close_matches(str(loc[-1] if loc else field), known, n=1)
        hint = f"; did you mean '{close[0]}'?" if close else (f"; known fields: {', '.join(known)}." if known else ".")
        return f"{owner} has no field '{field.split('.')[-1]}'{hint}"
    if kind == "missing":
        return f"the field '{field.split('.')[-1]}' is required for {owner}; add it."
    if kind == "literal_error":
        return f"{err['msg'].replace('Input should be', 'expected')}, got {err.get('input')!r}."
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    got = err.get("input")
    shown = f", got {_as_written(got)}" if got is not None and not isinstance(got, (dict, list)) else ""
    return f"{msg[0].lower() + msg[1:]}{shown} ({owner} field '{field}')." if field != "value" else f"{msg}{shown}."


def _as_written(value: Any) -> str:
    """A value as the experiment file writes it: true, not Python's True; a long one cut (5000 digits bury a line)."""
    text = ("true" if value else "false") if isinstance(value, bool) else repr(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def _known_fields(model, loc: Loc) -> list[str]:
    current = model
    for part in loc:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        if info is None:
            return []
        current = _model_of(info.annotation)
        if current is None:
            return []
    return sorted(getattr(current, "model_fields", {}))


def _model_of(annotation) -> type[BaseModel] | None:
    import typing

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None
