"""An experiment file's `variables:`: folders and model paths that differ between machines, given once.

    variables:
      VPC_ROOT: null                 # required: `vpeval --var VPC_ROOT=/data/vpc2024 ...`
      ASV_MODEL: ${VPC_ROOT}/exp/asv_orig   # a default may use variables declared above it
    data:
      corpus: {use: vpc, params: {root: "${VPC_ROOT}/data"}}

`${NAME}` inside any string value is replaced by the variable's value (the command line's `--var
NAME=VALUE` first, else the file's default). A value that is exactly `${NAME}` takes the type of a numeric
default (`EPOCHS: 10` ... `epochs: "${EPOCHS}"` is the number 10; `--var EPOCHS=2` too). A default that is a
list of paths takes the first that exists (the first when none does), with a one-line note when it is not
the first: `ASR: ["${VPC_ROOT}/exp/asr", "${VPC_ROOT}/exp/asr_pre_ctc_wav2vec2"]` finds a folder under its
current name or its older one.
Substitution happens on the parsed values, never on the YAML
text, so a value cannot inject YAML structure, and every error keeps the file and line of the value. The
resolved experiment (resolved.yaml) holds the substituted values, so cache keys see real paths.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vpeval.errors import ConfigError
from vpeval.yamlsource import Loc, YamlDocument

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REFERENCE = re.compile(r"\$\{([^}]*)\}")


def parse_assignments(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """`NAME=VALUE` strings of the command line (`--var`) as a mapping; ConfigError for a malformed one."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not NAME.fullmatch(name):
            raise ConfigError(f"--var {pair!r} is not NAME=VALUE; write it as, for example, --var VPC_ROOT=/data/vpc.")
        out[name] = value
    return out


def substitute_variables(doc: YamlDocument, given: Mapping[str, str] | None = None) -> None:
    """Replace `${NAME}` in every string of `doc.data` and drop its `variables:` section (in place)."""
    given = dict(given or {})
    data = doc.data
    declared = data.pop("variables", None) if isinstance(data, dict) else None
    if declared is None:
        if given:
            raise ConfigError(
                f"{doc.path} declares no `variables:`, so --var {next(iter(given))} has nothing to set; declare "
                "it in the file's `variables:` section."
            )
        _refuse_references(doc, data, ())
        return
    if not isinstance(declared, dict):
        raise ConfigError(f"{doc.where(('variables',))}: `variables` is a mapping of NAME: default (null: required).")
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ConfigError(
            f"--var {unknown[0]}: {doc.path} declares no such variable (it declares {', '.join(declared) or 'none'})."
        )
    values: dict[str, Any] = {}
    problems: list[str] = []  # every missing variable at once, one line each (then nothing is substituted)
    pending: set[str] = set()  # missing, and the defaults built from them
    for name, default in declared.items():
        loc = ("variables", name)
        if not NAME.fullmatch(str(name)):
            raise ConfigError(f"{doc.where(loc)}: a variable name is letters, digits and _; rename '{name}'.")
        try:
            if name in given:
                values[name] = _typed(name, given[name], default, doc, loc)
            elif default is None:
                pending.add(name)
                problems.append(
                    f"{doc.where(loc)}: the variable {name} has no default{_about(doc, loc)}; give it on the command "
                    f"line: --var {name}=VALUE."
                )
            elif isinstance(default, (int, float)):  # and bool: a whole `${NAME}` keeps the type
                values[name] = default
            elif isinstance(default, str):
                values[name] = _replace(doc, default, loc, values, pending)  # earlier variables only
            elif isinstance(default, list) and default and all(isinstance(item, str) for item in default):
                values[name] = _first_existing(
                    doc, name, [_replace(doc, d, loc + (i,), values, pending) for i, d in enumerate(default)]
                )
            else:
                raise ConfigError(
                    f"{doc.where(loc)}: a variable's default is a string, a number, true or false, a list of paths "
                    "(the first that exists), or null (required)."
                )
        except _Pending:
            pending.add(name)
        except ConfigError as error:
            problems.append(str(error))
    if problems:
        raise ConfigError("\n".join(problems))
    doc.data = _walk(doc, data, (), values)


def _first_existing(doc: YamlDocument, name: str, paths: list[str]) -> str:
    for path in paths:
        if Path(path).expanduser().exists():
            if path != paths[0]:
                logging.getLogger("vpeval").warning(
                    "%s: %s is %s, the alternative the file gives, as %s does not exist", doc.path, name, path, paths[0]
                )
            return path
    return paths[0]


def _walk(doc: YamlDocument, value: Any, loc: Loc, values: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return _replace(doc, value, loc, values)
    if isinstance(value, dict):
        return {key: _walk(doc, item, loc + (key,), values) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(doc, item, loc + (i,), values) for i, item in enumerate(value)]
    return value


def _typed(name: str, given: str, default: Any, doc: YamlDocument, loc: Loc) -> Any:
    """A --var value as the type of the file's numeric or true/false default (a string otherwise)."""
    if isinstance(default, bool):
        if given.lower() not in ("true", "false"):
            raise ConfigError(f"--var {name}={given}: {doc.where(loc)} declares {name} true or false; give one.")
        return given.lower() == "true"
    if not isinstance(default, (int, float)):
        return given
    try:
        return type(default)(given)
    except ValueError:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise ConfigError(
            f"--var {name}={given}: {doc.where(loc)} declares {name} as {kind} (default {default}); give {kind}."
        ) from None


class _Pending(Exception):
    """A default built from a variable that is itself missing (reported once, for that variable)."""


def _about(doc: YamlDocument, loc: Loc) -> str:
    """` (what the file's comment says it is)`: the comment on the declaration's line, else the comment lines
    just above it; empty for a file without one (or an experiment given as text)."""
    line = doc.line_of(loc)
    try:
        lines = Path(doc.path).read_text(encoding="utf-8").splitlines() if line else []
    except OSError:
        return ""
    if not lines or line > len(lines):
        return ""
    _, mark, comment = lines[line - 1].partition(" #")
    notes = [comment.strip()] if mark else []
    above = line - 2
    while not notes and above >= 0 and lines[above].strip().startswith("#"):
        notes.insert(0, lines[above].strip().lstrip("#").strip())
        above -= 1
    text = " ".join(n for n in notes if n)
    return f" ({text})" if text else ""


def _replace(doc: YamlDocument, text: str, loc: Loc, values: dict[str, Any], pending: set[str] = frozenset()) -> Any:
    whole = REFERENCE.fullmatch(text)
    if whole and whole.group(1) in values:
        return values[whole.group(1)]  # keeps a numeric variable's type

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name in pending:
            raise _Pending(name)
        if name not in values:
            known = ", ".join(values) or "none so far"
            raise ConfigError(
                f"{doc.where(loc)}: ${{{name}}} names no variable declared before it ({known}); declare it under "
                "`variables:` at the top of the file."
            )
        return str(values[name])

    return REFERENCE.sub(one, text)


def _refuse_references(doc: YamlDocument, value: Any, loc: Loc) -> None:
    """A `${NAME}` in a file without `variables:` would reach a plugin as a literal path."""
    if isinstance(value, str) and REFERENCE.search(value):
        raise ConfigError(
            f"{doc.where(loc)}: {REFERENCE.search(value).group(0)} refers to a variable, but the file has no "
            "`variables:` section; declare it there (null for one the command line must give)."
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_references(doc, item, loc + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _refuse_references(doc, item, loc + (i,))
