"""Result documents made from their runs (issue 40): docs/results/<doc>.md from <doc>.template.md and <doc>.run/.

<doc>.run/ keeps the run's machine-readable results: results.json and resolved.yaml as the run wrote them (what
`vpeval report` reads) and experiment.yaml, the experiment file as it was run (which parameters it set; a run
with --var keeps the values it was given as the file's variable defaults).

The template is the document's hand-written prose, with two kinds of markup:

- a line `<!-- vpeval report ARGS -->`: below it goes what `vpeval report <doc>.run ARGS` prints, then the line
  `<!-- end of generated table -->`; both comment lines stay in the document, so it says how each table was made.
- `[[text]]`: text that is not a result of this run (a date, a commit, a size or count of the setup, a number of
  another run or of a paper, arithmetic on the results); the document shows it without the brackets.

Every other number in the prose (outside code spans and generated tables) must be a value in the run's
results.json: a number quoted with d decimals matches a value that rounds to it (the sign is not compared).

A default that changed after the run: every parameter that resolved.yaml recorded for a plugin and that the
installed plugin now resolves differently from the same experiment file (another default, a parameter removed
or added) must be named in a dated banner of the template (a quoted paragraph opening `> **Banner of
YYYY-MM-DD`), or the run redone. Nested plugin specs inside a plugin's params are not resolved in
resolved.yaml, so they are not compared.

    python scripts/results_docs.py            # write every docs/results/<doc>.md that has a template
    python scripts/results_docs.py --check    # exit 1 when a document differs, a number is not in its results,
                                              # or a changed default is neither rerun nor bannered
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

RESULTS_DIR = Path(__file__).resolve().parent.parent / "docs" / "results"
TEMPLATE_SUFFIX = ".template.md"
REPORT_LINE = re.compile(r"^<!-- vpeval report (?P<args>.*?) -->$")
END_LINE = "<!-- end of generated table -->"
NOT_RESULT = re.compile(r"\[\[(.*?)\]\]", re.S)
CODE_SPAN = re.compile(r"`[^`]*`")
# A number not glued to a word (commit hashes, seed003, top-1, log2 are not numbers of the prose).
NUMBER = re.compile(r"(?<![\w.])(?<![A-Za-z]-)\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
BANNER = re.compile(r"^> \*\*(?:[^*]*?)?[Bb]anner of \d{4}-\d{2}-\d{2}")
NOT_REGENERABLE = "Tables not regenerable: results not kept"
KINDS = {"anonymizers": "anonymizer", "attackers": "attacker", "metrics": "metric", "frontend": "frontend"}


def templates(results_dir: Path = RESULTS_DIR) -> list[Path]:
    return sorted(results_dir.glob(f"*{TEMPLATE_SUFFIX}"))


def doc_of(template: Path) -> Path:
    return template.with_name(template.name[: -len(TEMPLATE_SUFFIX)] + ".md")


def run_of(template: Path) -> Path:
    return template.with_name(template.name[: -len(TEMPLATE_SUFFIX)] + ".run")


# -- generating ---------------------------------------------------------------------------------------------


def vpeval_report(run: Path, args: str) -> str:
    """What `vpeval report RUN ARGS` prints, run in this process through the CLI itself."""
    import shlex

    from click.testing import CliRunner

    from vpeval.cli import main

    result = CliRunner().invoke(main, ["report", str(run), *shlex.split(args)], catch_exceptions=False)
    if result.exit_code != 0:
        raise SystemExit(f"vpeval report {run} {args} failed ({result.exit_code}): {result.output.strip()}")
    return result.output.rstrip("\n")


def render(template: Path) -> str:
    """The document: the template's prose without [[ ]], each report line followed by its table."""
    run = run_of(template)  # `vpeval report` prints the run's experiment name, not this path
    out: list[str] = []
    for line in template.read_text(encoding="utf-8").splitlines():
        match = REPORT_LINE.match(line.strip())
        if match:
            out += [line, "", vpeval_report(run, match["args"]), "", END_LINE]
        else:
            out.append(line)
    return NOT_RESULT.sub(lambda m: m[1], "\n".join(out) + "\n")


# -- numbers of the prose -----------------------------------------------------------------------------------


def prose_numbers(template_text: str) -> list[tuple[int, str]]:
    """(line number, number as written) of every number the prose quotes as a result."""
    found = []
    for i, line in enumerate(NOT_RESULT.sub("", template_text).splitlines(), 1):
        if REPORT_LINE.match(line.strip()) or line.startswith("<!--"):
            continue
        found += [(i, m[0]) for m in NUMBER.finditer(CODE_SPAN.sub("", line))]
    return found


def result_values(results: dict[str, Any]) -> list[float]:
    """The numbers a document may quote: each row's value and interval and the numbers among its details
    (trial counts, chance, far/frr; nested ones such as the bootstrap settings not), and the run's corpus and
    trial counts. Absolute values."""

    def numbers(mapping: Any) -> list[float]:
        items = mapping.values() if isinstance(mapping, dict) else []
        return [abs(float(v)) for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]

    found = numbers(results.get("corpus")) + numbers(results.get("trials") or {}) + numbers(results.get("n_trials"))
    for row in results.get("rows") or []:
        found += numbers({k: row.get(k) for k in ("value", "ci_low", "ci_high")}) + numbers(row.get("details"))
    return found


def matches(quoted: str, values: list[float]) -> bool:
    plain = quoted.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    target, half = float(plain), 0.5 * 10**-decimals + 1e-9
    return any(abs(v - target) <= half for v in values)


def unmatched_numbers(template: Path) -> list[str]:
    results = json.loads((run_of(template) / "results.json").read_text(encoding="utf-8"))
    values = result_values(results)
    text = template.read_text(encoding="utf-8")
    return [f"{template.name}:{line}: {number}" for line, number in prose_numbers(text) if not matches(number, values)]


# -- defaults changed since the run ------------------------------------------------------------------------


def _steps(section: str, resolved: dict, explicit: dict) -> list[tuple[str, str, dict, dict]]:
    """(where, plugin name, recorded params, params the experiment file set) of each plugin of a section."""
    out = []
    if section == "anonymizers":
        for i, (rec, exp) in enumerate(zip(resolved.get("anonymizers") or [], explicit.get("anonymizers") or [])):
            exp = {"use": exp} if isinstance(exp, str) else exp
            exp_steps = exp.get("chain") or [{"use": exp.get("use"), "params": exp.get("params") or {}}]
            for j, (r, e) in enumerate(zip(rec.get("chain") or [], exp_steps)):
                e = {"use": e} if isinstance(e, str) else e
                out.append((f"anonymizers[{i}].chain[{j}]", r["use"], r.get("params") or {}, e.get("params") or {}))
    elif section in ("attackers", "metrics"):
        default = [{"use": "eer"}] if section == "metrics" else []
        for i, (rec, exp) in enumerate(zip(resolved.get(section) or [], explicit.get(section, default) or [])):
            exp = {"use": exp} if isinstance(exp, str) else exp
            out.append((f"{section}[{i}]", rec["use"], rec.get("params") or {}, exp.get("params") or {}))
            if section == "attackers" and rec.get("frontend"):
                front = exp.get("frontend") or {}
                front = {"use": front} if isinstance(front, str) else front
                out.append(
                    (f"attackers[{i}].frontend", rec["frontend"]["use"], rec["frontend"].get("params") or {},
                     front.get("params") or {})
                )  # fmt: skip
    return out


def changed_defaults(run: Path) -> list[tuple[str, str, str, Any, Any]]:
    """(where, plugin, parameter, recorded, now) for each parameter the installed plugins resolve otherwise
    from the run's experiment file than resolved.yaml recorded ('absent' where one side has no such parameter)."""
    from vpeval.params import validate_params
    from vpeval.registry import get_plugin_manager
    from vpeval.schema import Experiment
    from vpeval.variables import substitute_variables
    from vpeval.yamlsource import load_yaml

    resolved = yaml.safe_load((run / "resolved.yaml").read_text(encoding="utf-8"))
    experiment = load_yaml(run / "experiment.yaml")
    substitute_variables(experiment)  # the run's --var values are the kept file's variable defaults
    explicit = experiment.data
    manager = get_plugin_manager()
    changes = []
    steps = [("data.corpus", "corpus", resolved["data"]["corpus"], explicit["data"]["corpus"])]
    steps = [(w, k, r["use"], r.get("params") or {}, (e if isinstance(e, dict) else {}).get("params") or {})
             for w, k, r, e in steps]  # fmt: skip
    for section in ("anonymizers", "attackers", "metrics"):
        for where, name, recorded, given in _steps(section, resolved, explicit):
            kind = "frontend" if where.endswith("frontend") else KINDS[section]
            steps.append((where, kind, name, recorded, given))
    for where, kind, name, recorded, given in steps:
        try:
            now = validate_params(manager.get(kind, name), given).model_dump(mode="json")
        except Exception as exc:  # a plugin gone, or a parameter the file sets that no longer validates
            changes.append((where, name, "(the plugin)", "as run", f"fails now: {str(exc).splitlines()[0]}"))
            continue
        for param in sorted(set(recorded) | set(now)):
            if param in given:
                continue
            before, after = recorded.get(param, "absent"), now.get(param, "absent")
            if before != after:
                changes.append((where, name, param, before, after))
    data_now = Experiment.model_validate(explicit).data.model_dump(mode="json")
    for param, before in resolved["data"].items():
        if param != "corpus" and param not in explicit["data"] and data_now.get(param, "absent") != before:
            changes.append(("data", "vpeval", param, before, data_now.get(param, "absent")))
    return changes


def banners(text: str) -> str:
    """The dated banners of a document (quoted paragraphs opening `> **Banner of YYYY-MM-DD`), as one text."""
    out, inside = [], False
    for line in text.splitlines():
        inside = bool(BANNER.match(line)) or (inside and line.startswith(">"))
        if inside:
            out.append(line)
    return "\n".join(out)


def unbannered_changes(template: Path) -> list[str]:
    named = banners(NOT_RESULT.sub(lambda m: m[1], template.read_text(encoding="utf-8")))
    return [
        f"{template.name}: {where} ({plugin}) `{param}` was {before!r} in the run, resolves to {after!r} now; "
        f"rerun the experiment or name `{param}` in a dated banner"
        for where, plugin, param, before, after in changed_defaults(run_of(template))
        if not re.search(rf"\b{re.escape(param)}\b", named)
    ]


def problems(template: Path) -> list[str]:
    doc = doc_of(template)
    found = []
    if not doc.exists() or doc.read_text(encoding="utf-8") != render(template):
        found.append(f"{doc.name} is not what {template.name} and its run make: run python scripts/results_docs.py")
    return found + unmatched_numbers(template) + unbannered_changes(template)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    chosen = [t for t in templates() if not names or doc_of(t).stem in names or t.name in names]
    if check:
        found = [p for t in chosen for p in problems(t)]
        print("\n".join(found) or f"{len(chosen)} documents match their runs.")
        return 1 if found else 0
    for template in chosen:
        doc_of(template).write_text(render(template), encoding="utf-8")
        print(f"wrote {doc_of(template)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
