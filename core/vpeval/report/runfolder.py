"""Reading a run folder back for `vpeval report`: results.json and resolved.yaml, checked once, here.

Every report path (the combined Markdown report, paper tables, captions) loads runs through `load_run`,
so a broken folder gets the same sentence everywhere: which file, what is wrong with it, and that the
experiment can be rerun to write it again. The checks are pydantic models of what the run writes
(vpeval.report.writer): an edited, truncated or foreign file fails here, not as a KeyError deep inside
a table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vpeval.errors import DataError
from vpeval.safepath import PathProblem, stat_regular

RESULTS, RESOLVED = "results.json", "resolved.yaml"
MAX_BYTES = 1 << 30  # a results.json of a million rows is a few hundred MB
REWRITE = "rerun its experiment (`vpeval --experiment FILE --output RUN`) to write the run folder again"


class ResultRow(BaseModel):
    """One result as the runner writes it (vpeval.run.stage_metrics._row); other keys are kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True)

    anonymizer: str
    attacker: str
    scenario: str
    protocol: str
    n: int | None
    metric: str
    value: float | None
    metric_plugin: str | None = None
    gender: str = "all"
    ci_low: float | None = None
    ci_high: float | None = None
    unit: str = ""
    details: dict[str, Any] = Field(default_factory=dict)


class ResultsFile(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)

    rows: list[ResultRow]
    experiment: str | None = None
    corpus: dict[str, Any] = Field(default_factory=dict)
    trials: dict[str, Any] = Field(default_factory=dict)


class _Step(BaseModel):
    model_config = ConfigDict(extra="allow")
    use: str


class _Anonymizer(BaseModel):
    model_config = ConfigDict(extra="allow")
    label: str
    chain: list[_Step] = Field(default_factory=list)


class _Attacker(BaseModel):
    model_config = ConfigDict(extra="allow")
    label: str
    use: str
    frontend: _Step | None = None


class _Data(BaseModel):
    model_config = ConfigDict(extra="allow")
    corpus: dict[str, Any] | None = None


class ResolvedFile(BaseModel):
    """The parts of resolved.yaml that reports read (captions: data, anonymizer chains, attackers)."""

    model_config = ConfigDict(extra="allow")

    data: _Data | None = None
    anonymizers: list[_Anonymizer] = Field(default_factory=list)
    attackers: list[_Attacker] = Field(default_factory=list)


@dataclass
class LoadedRun:
    folder: Path
    results: dict[str, Any]  # results.json, its rows checked (with defaults filled in)
    resolved: dict[str, Any]  # resolved.yaml as written

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.results["rows"]

    @property
    def name(self) -> str:
        return str(self.results.get("experiment") or self.folder.name)


def load_run(folder: str | Path) -> LoadedRun:
    """The checked contents of a run folder; DataError with one sentence for anything broken."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is a file, not a folder"
        raise DataError(f"The run folder {folder} {what}; pass run folders written by `vpeval --experiment`.")
    results_path = folder / RESULTS
    if not results_path.exists() and not results_path.is_symlink():
        raise DataError(f"{folder} has no {RESULTS}; pass run folders written by `vpeval --experiment`.")
    results = _parse_json(results_path)
    resolved_path = folder / RESOLVED
    if not resolved_path.exists() and not resolved_path.is_symlink():
        raise DataError(
            f"{folder} has {RESULTS} but no {RESOLVED} (the experiment as run, which reports cite); {REWRITE}."
        )
    resolved = _parse_yaml(resolved_path)
    return LoadedRun(
        folder,
        _checked(ResultsFile, results, results_path),
        _checked(ResolvedFile, resolved, resolved_path, dump=False),
    )


def _read(path: Path) -> str:
    try:
        stat_regular(path, MAX_BYTES)
        return path.read_text(encoding="utf-8")
    except PathProblem as problem:  # its own advice ("give the path of a file") is for a user's file
        raise DataError(f"{path} cannot be used: {problem.reason.split(';')[0]}; {REWRITE}.") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path} is not UTF-8 text (byte {exc.start} is not); {REWRITE}.") from None
    except PermissionError:
        raise DataError(f"{path} cannot be read (permission denied); make it readable for your user.") from None
    except OSError as exc:
        raise DataError(f"{path} cannot be read ({exc.strerror or exc}); check the disk, or {REWRITE}.") from None


def _parse_json(path: Path) -> Any:
    try:
        return json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); {REWRITE}."
        ) from None


def _parse_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(_read(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "unreadable YAML"
        raise DataError(f"{path} is not valid YAML ({problem}{where}); {REWRITE}.") from None


def _checked(model: type[BaseModel], data: Any, path: Path, dump: bool = True) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise DataError(f"{path} holds {_kind(data)}, not the mapping vpeval writes there; {REWRITE}.")
    try:
        checked = model.model_validate(data)
    except ValidationError as exc:
        problem = _problem(exc.errors()[0])
        raise DataError(f"{path}{' ' if problem.startswith('has no') else ': '}{problem}; {REWRITE}.") from None
    return checked.model_dump() if dump else data


def _problem(error: dict[str, Any]) -> str:
    """`rows[3].value is 'high', not a number` from pydantic's first error."""
    loc = [part for part in error["loc"] if part not in ("function-after", "function-wrap")]
    field = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))
    if error["type"] == "missing":
        parent = field.rsplit(".", 1)[0] if "." in field else ""
        return f"{parent + ' has' if parent else 'has'} no `{loc[-1]}`"
    wanted = {
        "float_type": "a number",
        "int_type": "a whole number",
        "string_type": "text",
        "dict_type": "a mapping",
        "list_type": "a list",
        "model_type": "a mapping",
        "model_attributes_type": "a mapping",
    }.get(error["type"])
    shown = repr(error.get("input"))
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    if wanted:
        return f"{field} is {shown} ({_kind(error.get('input'))}), not {wanted}"
    return f"{field} is {shown}: {error['msg'][0].lower() + error['msg'][1:]}"


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)
