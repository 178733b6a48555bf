"""Result documents made from their runs (issue 40): docs/results/<doc>.md from <doc>.template.md and <doc>.run/.

<doc>.run/ keeps the run's machine-readable results: results.json and resolved.yaml as the run wrote them (what
`vpeval report` reads) and experiment.yaml, the experiment file as it was run (which parameters it set; a run
with --var keeps the values it was given as the file's variable defaults).

A document may draw on other kept runs too: every docs/results/<name>.run folder is a kept run, with a template of
its own or without one (dast-table1.run: a run that the dast document, and seed001's notes, declare). A template
without a run of its own (a notes page) is allowed when it declares runs.

The template is the document's hand-written prose, with this markup:

- a line `<!-- runs: NAME NAME ... -->`: the other kept runs the document draws on, each docs/results/NAME.run.
- a line `<!-- vpeval report ARGS -->`: below it goes what `vpeval report <doc>.run ARGS` prints, then the line
  `<!-- end of generated table -->`; both comment lines stay in the document, so it says how each table was made.
  `<!-- vpeval report @NAME ARGS -->` prints `vpeval report docs/results/NAME.run ARGS`, NAME a declared run.
- `[[text]]`: text that is not a result of these runs (a date, a commit, a size or count of the setup, a number
  of another run or of a paper, arithmetic on the results); the document shows it without the brackets.

Every other number in the prose (outside code spans and generated tables) must be a value in the results.json of
the document's runs (its own and those it declares): a number quoted with d decimals matches a value that rounds
to it (the sign is not compared).

A default that changed after the run: every parameter that resolved.yaml recorded for a plugin and that the
installed plugin now resolves differently from the same experiment file (another default, a parameter removed
or added) must be named in a dated banner of the template (a quoted paragraph opening `> **Banner of
YYYY-MM-DD`), or the run redone. The plugins that a plugin names in its params (PluginRef fields: embedding-view's
`use`, poolvc's `pool`, an encoder by name; and what those name) are not resolved in resolved.yaml, so
<doc>.run/nested.yaml records them: each one's parameters as the installed code resolved them when the run was kept
(`--record-nested <doc>`, right after the run). A nested parameter that the run did not set and that resolves
otherwise now is a change like any other.

Every kept run is checked so: a run with a template of its own against that template's banners, a run without
one against the banners of every template that declares it (each must name the change), and a run that no
template declares against none (rerun it, or declare it).

    python scripts/results_docs.py            # write every docs/results/<doc>.md that has a template
    python scripts/results_docs.py --check    # exit 1 when a document differs, a number is not in its results,
                                              # or a kept run's changed default is neither rerun nor bannered
    python scripts/results_docs.py --record-nested NAME  # write NAME.run/nested.yaml (after keeping a run)

A section of a document outside docs/results (README's demo results: SECTIONS) is made the same way from its
template and a kept run, between a start and an end comment line in the document; the rest of the document is
left as it is. Its prose numbers are checked against that run; the run's own document carries its banners.
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
REPORT_LINE = re.compile(r"^<!-- vpeval report (?:@(?P<run>\S+) ?)?(?P<args>.*?) -->$")
RUNS_LINE = re.compile(r"^<!-- runs:(?P<names>[^>]*?) -->$")
RUN_SUFFIX = ".run"
END_LINE = "<!-- end of generated table -->"
NOT_RESULT = re.compile(r"\[\[(.*?)\]\]", re.S)
CODE_SPAN = re.compile(r"`[^`]*`")
# A number not glued to a word (commit hashes, seed003, top-1, log2 are not numbers of the prose).
NUMBER = re.compile(r"(?<![\w.])(?<![A-Za-z]-)\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
BANNER = re.compile(r"^> \*\*(?:[^*]*?)?[Bb]anner of \d{4}-\d{2}-\d{2}")
NOT_REGENERABLE = "Tables not regenerable: results not kept"
NESTED = "nested.yaml"
# Sections of documents outside docs/results made the same way (document, template, run): README's demo results.
# In the document a section lies between its start line (naming the template) and SECTION_END.
SECTIONS = [(RESULTS_DIR.parent.parent / "README.md", RESULTS_DIR / "demo.readme-section.md", RESULTS_DIR / "demo.run")]
SECTION_START = "<!-- made by scripts/results_docs.py from docs/results/{template} and the run it names: edit that -->"
SECTION_END = "<!-- end of the made section -->"
KINDS = {"anonymizers": "anonymizer", "attackers": "attacker", "metrics": "metric", "frontend": "frontend"}


def templates(results_dir: Path = RESULTS_DIR) -> list[Path]:
    return sorted(results_dir.glob(f"*{TEMPLATE_SUFFIX}"))


def doc_of(template: Path) -> Path:
    return template.with_name(template.name[: -len(TEMPLATE_SUFFIX)] + ".md")


def run_of(template: Path) -> Path:
    """The template's own run folder (it may not exist: a notes page draws on declared runs only)."""
    return template.with_name(template.name[: -len(TEMPLATE_SUFFIX)] + RUN_SUFFIX)


def kept_runs(results_dir: Path = RESULTS_DIR) -> list[Path]:
    return sorted(p for p in results_dir.glob(f"*{RUN_SUFFIX}") if p.is_dir())


def declared_names(template: Path) -> list[str]:
    """The names on the template's `<!-- runs: ... -->` lines, in order."""
    lines = template.read_text(encoding="utf-8").splitlines()
    return [name for line in lines if (m := RUNS_LINE.match(line.strip())) for name in m["names"].split()]


def run_named(template: Path, name: str) -> Path:
    """The kept run `name` beside the template (docs/results/<name>.run)."""
    return template.parent / (name + RUN_SUFFIX)


def declared_runs(template: Path) -> list[Path]:
    return [run_named(template, name) for name in declared_names(template)]


def runs_of(template: Path, run: Path | None = None) -> list[Path]:
    """The runs a document draws on: its own (given, or <doc>.run where it exists), then the declared ones."""
    own = run or run_of(template)
    return ([own] if run or own.is_dir() else []) + [r for r in declared_runs(template) if r != own]


def template_of(run: Path) -> Path:
    return run.with_name(run.name[: -len(RUN_SUFFIX)] + TEMPLATE_SUFFIX)


def run_declaration_problems(template: Path) -> list[str]:
    """A declared run that is not kept, a report line naming a run the template does not declare, a template
    with no run at all."""
    found = [f"{template.name} declares the run {r.name[: -len(RUN_SUFFIX)]}, but {r.parent.name}/{r.name} is not "
             "there: keep the run there or remove it from the `<!-- runs: ... -->` line"
             for r in declared_runs(template) if not r.is_dir()]  # fmt: skip
    declared = set(declared_names(template))
    for i, line in enumerate(template.read_text(encoding="utf-8").splitlines(), 1):
        match = REPORT_LINE.match(line.strip())
        if match and match["run"] and match["run"] not in declared:
            found.append(f"{template.name}:{i}: `@{match['run']}` is not a run the template declares: add it to a "
                         f"`<!-- runs: ... -->` line")  # fmt: skip
        elif match and not match["run"] and not run_of(template).is_dir():
            found.append(f"{template.name}:{i}: a report line without @NAME reports the document's own run, and "
                         f"{run_of(template).name} is not there: name a declared run (`@NAME`)")  # fmt: skip
    if not runs_of(template):
        found.append(f"{template.name} has no run: keep one in {run_of(template).name} or declare runs with a "
                     "`<!-- runs: NAME ... -->` line")  # fmt: skip
    return found


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


def render(template: Path, run: Path | None = None) -> str:
    """The document: the template's prose without [[ ]], each report line followed by its table (of the
    document's own run, or of the declared run it names with @NAME)."""
    run = run or run_of(template)  # `vpeval report` prints the run's experiment name, not this path
    declared = set(declared_names(template))
    out: list[str] = []
    for line in template.read_text(encoding="utf-8").splitlines():
        match = REPORT_LINE.match(line.strip())
        if match and match["run"] and match["run"] not in declared:
            raise SystemExit(run_declaration_problems(template)[0])
        if match:
            source = run_named(template, match["run"]) if match["run"] else run
            out += [line, "", vpeval_report(source, match["args"]), "", END_LINE]
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
    (trial counts, chance, far/frr; nested ones such as the bootstrap settings not), the run's corpus and
    trial counts, each training epoch's loss and validation EER, and both sides of each finding's groups
    (report.md's findings). Absolute values."""

    def numbers(mapping: Any) -> list[float]:
        items = mapping.values() if isinstance(mapping, dict) else []
        return [abs(float(v)) for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]

    found = numbers(results.get("corpus")) + numbers(results.get("trials") or {}) + numbers(results.get("n_trials"))
    for row in results.get("rows") or []:
        found += numbers({k: row.get(k) for k in ("value", "ci_low", "ci_high")}) + numbers(row.get("details"))
    for attacker in results.get("training") or []:
        found += [v for epoch in attacker.get("epochs") or [] for v in numbers(epoch) if v != epoch.get("epoch")]
    for finding in results.get("findings") or []:
        found += [v for group in finding.get("groups") or [] for v in numbers(group)]
    return found


def matches(quoted: str, values: list[float]) -> bool:
    plain = quoted.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    target, half = float(plain), 0.5 * 10**-decimals + 1e-9
    return any(abs(v - target) <= half for v in values)


def unmatched_numbers(template: Path, run: Path | None = None) -> list[str]:
    """The prose numbers that are in none of the document's runs' results (its own and the declared ones)."""
    values = [
        v
        for r in runs_of(template, run)
        if (r / "results.json").exists()
        for v in result_values(json.loads((r / "results.json").read_text(encoding="utf-8")))
    ]
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


def _run_files(run: Path) -> tuple[dict, dict]:
    """(resolved.yaml, the kept experiment file with its variables substituted) of a kept run."""
    from vpeval.variables import substitute_variables
    from vpeval.yamlsource import load_yaml

    resolved = yaml.safe_load((run / "resolved.yaml").read_text(encoding="utf-8"))
    experiment = load_yaml(run / "experiment.yaml")
    substitute_variables(experiment)  # the run's --var values are the kept file's variable defaults
    return resolved, experiment.data


def plugin_steps(resolved: dict, explicit: dict) -> list[tuple[str, str, str, dict, dict]]:
    """(where, kind, plugin name, params resolved.yaml recorded, params the file set) of every plugin of a run."""
    steps = [("data.corpus", "corpus", resolved["data"]["corpus"], explicit["data"]["corpus"])]
    steps = [(w, k, r["use"], r.get("params") or {}, (e if isinstance(e, dict) else {}).get("params") or {})
             for w, k, r, e in steps]  # fmt: skip
    for section in ("anonymizers", "attackers", "metrics"):
        for where, name, recorded, given in _steps(section, resolved, explicit):
            kind = "frontend" if where.endswith("frontend") else KINDS[section]
            steps.append((where, kind, name, recorded, given))
    return steps


def changed_defaults(run: Path) -> list[tuple[str, str, str, Any, Any]]:
    """(where, plugin, parameter, recorded, now) for each parameter the installed plugins resolve otherwise
    from the run's experiment file than resolved.yaml recorded ('absent' where one side has no such parameter),
    then the same for the plugins that these name (changed_nested_defaults)."""
    from vpeval.params import validate_params
    from vpeval.registry import get_plugin_manager
    from vpeval.schema import Experiment

    resolved, explicit = _run_files(run)
    manager = get_plugin_manager()
    changes = []
    for where, kind, name, recorded, given in plugin_steps(resolved, explicit):
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
    return changes + changed_nested_defaults(run)


# -- the plugins that plugins name (nested.yaml) -----------------------------------------------------------


def nested_plugins(run: Path) -> list[dict[str, Any]]:
    """Each plugin that a plugin of the run names through a PluginRef field (and what that one names), as the
    installed code resolves it from the params resolved.yaml recorded: where, kind, use, the params given to
    it, and its params with every default filled in. A plugin whose recorded params no longer validate names
    nothing here (changed_defaults reports that plugin itself)."""
    from vpeval.params import validate_params
    from vpeval.references import named_plugins
    from vpeval.registry import get_plugin_manager

    resolved, explicit = _run_files(run)
    manager = get_plugin_manager()
    found = []
    for where, kind, name, recorded, _ in plugin_steps(resolved, explicit):
        try:
            named = named_plugins(manager, validate_params(manager.get(kind, name), recorded))
        except Exception:  # noqa: BLE001 - changed_defaults reports this plugin's own change
            continue
        for nested_kind, nested_name, given in named:
            entry = {"where": where, "kind": nested_kind, "use": nested_name, "given": given}
            try:
                entry["params"] = validate_params(manager.get(nested_kind, nested_name), given).model_dump(mode="json")
            except Exception as exc:  # noqa: BLE001 - a nested plugin gone, or the params given to it refused
                entry["params"] = f"fails: {str(exc).splitlines()[0]}"
            found.append(entry)
    return found


def record_nested(run: Path) -> Path:
    """Write run/nested.yaml, the nested plugins as the installed code resolves them: call it when the run is
    kept, with the code that ran it."""
    import datetime
    import subprocess

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    header = (
        f"# The plugins this run's plugins name, resolved by scripts/results_docs.py --record-nested on "
        f"{datetime.date.today()}\n# (HEAD {commit or 'unknown'} and its working tree): what the check compares.\n"
    )
    path = run / NESTED
    path.write_text(header + yaml.safe_dump(nested_plugins(run), sort_keys=False), encoding="utf-8")
    return path


def changed_nested_defaults(run: Path) -> list[tuple[str, str, str, Any, Any]]:
    """(where, 'kind name', parameter, recorded, now) for each parameter of a nested plugin, not given to it,
    that resolves otherwise now than nested.yaml recorded; a nested plugin named now and not then (or the
    reverse) is a change of its own."""
    path = run / NESTED
    if not path.exists():
        return [("(the run)", NESTED, "(the record)", "absent", "run scripts/results_docs.py --record-nested")]
    recorded = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    now = nested_plugins(run)
    changes: list[tuple[str, str, str, Any, Any]] = []
    for i in range(max(len(recorded), len(now))):
        before = recorded[i] if i < len(recorded) else None
        after = now[i] if i < len(now) else None
        if not (before and after and all(before[k] == after[k] for k in ("where", "kind", "use", "given"))):
            one = before or after
            changes.append((one["where"], "nested plugin", "(the plugin)", _named(before), _named(after)))
            continue
        plugin, old, new = f"{after['kind']} {after['use']}", before["params"], after["params"]
        if not isinstance(old, dict) or not isinstance(new, dict):
            changes += [(after["where"], plugin, "(the plugin)", old, new)] if old != new else []
            continue
        for param in sorted(set(old) | set(new)):
            if param not in after["given"] and old.get(param, "absent") != new.get(param, "absent"):
                changes.append((after["where"], plugin, param, old.get(param, "absent"), new.get(param, "absent")))
    return changes


def _named(entry: dict | None) -> str:
    return "absent" if entry is None else f"{entry['kind']} {entry['use']} given {entry['given']!r}"


def banners(text: str) -> str:
    """The dated banners of a document (quoted paragraphs opening `> **Banner of YYYY-MM-DD`), as one text."""
    out, inside = [], False
    for line in text.splitlines():
        inside = bool(BANNER.match(line)) or (inside and line.startswith(">"))
        if inside:
            out.append(line)
    return "\n".join(out)


def _unnamed(changes: list[tuple[str, str, str, Any, Any]], template: Path | None, label: str) -> list[str]:
    """The changes that the template's banners do not name (all of them when there is no template)."""
    named = banners(NOT_RESULT.sub(lambda m: m[1], template.read_text(encoding="utf-8"))) if template else ""
    return [
        f"{label}: {where} ({plugin}) `{param}` was {before!r} in the run, resolves to {after!r} now; "
        f"rerun the experiment or name `{param}` in a dated banner"
        for where, plugin, param, before, after in changes
        if not re.search(rf"\b{re.escape(param)}\b", named)
    ]


def unbannered_changes(template: Path) -> list[str]:
    """The changed defaults of the template's own run, and of each declared run without a template of its own,
    that the template's banners do not name."""
    found = _unnamed(changed_defaults(run_of(template)), template, template.name) if run_of(template).is_dir() else []
    for run in declared_runs(template):
        if run.is_dir() and run != run_of(template) and not template_of(run).exists():
            found += _unnamed(changed_defaults(run), template, f"{template.name} (declared run {run.name})")
    return found


def undeclared_run_changes(results_dir: Path = RESULTS_DIR) -> list[str]:
    """The changed defaults of each kept run that has no template and that no template declares: no banner can
    name them, so such a run is rerun (or declared by a document that banners the change)."""
    declared = {run for t in templates(results_dir) for run in declared_runs(t)}
    return [
        problem
        for run in kept_runs(results_dir)
        if not template_of(run).exists() and run not in declared
        for problem in _unnamed(changed_defaults(run), None, f"{run.name} (no template declares it)")
    ]


def problems(template: Path) -> list[str]:
    doc = doc_of(template)
    found = run_declaration_problems(template)
    if found:
        return found
    if not doc.exists() or doc.read_text(encoding="utf-8") != render(template):
        found.append(f"{doc.name} is not what {template.name} and its runs make: run python scripts/results_docs.py")
    return found + unmatched_numbers(template) + unbannered_changes(template)


def check(results_dir: Path = RESULTS_DIR, names: list[str] | None = None) -> tuple[list[str], int]:
    """(problems, number of documents checked) of the chosen documents (all when no names), and of the kept runs
    that no document declares (only when all are chosen)."""
    chosen = [t for t in templates(results_dir) if not names or doc_of(t).stem in names or t.name in names]
    found = [p for t in chosen for p in problems(t)]
    return found + ([] if names else undeclared_run_changes(results_dir)), len(chosen)


# -- sections of documents outside docs/results -------------------------------------------------------------


def section_bounds(text: str, template: Path) -> tuple[int, int] | None:
    """(start, end) offsets of the made section in a document's text: after its start line, before its end line."""
    start_line = SECTION_START.format(template=template.name)
    if start_line not in text or SECTION_END not in text.split(start_line, 1)[1]:
        return None
    start = text.index(start_line) + len(start_line) + 1
    return start, text.index(SECTION_END, start)


def section_problems(document: Path, template: Path, run: Path) -> list[str]:
    text = document.read_text(encoding="utf-8")
    bounds = section_bounds(text, template)
    if bounds is None:
        return [f"{document.name} has no section between '{SECTION_START.format(template=template.name)}' and "
                f"'{SECTION_END}'"]  # fmt: skip
    found = [] if text[bounds[0] : bounds[1]] == render(template, run) else [
        f"{document.name}'s section is not what {template.name} and {run.name} make: run python scripts/results_docs.py"
    ]  # fmt: skip
    return found + unmatched_numbers(template, run)


def write_section(document: Path, template: Path, run: Path) -> None:
    text = document.read_text(encoding="utf-8")
    bounds = section_bounds(text, template)
    if bounds is None:
        raise SystemExit(section_problems(document, template, run)[0])
    document.write_text(text[: bounds[0]] + render(template, run) + text[bounds[1] :], encoding="utf-8")


def main(argv: list[str]) -> int:
    if "--record-nested" in argv:
        for name in [a for a in argv if not a.startswith("--")]:
            print(f"wrote {record_nested(RESULTS_DIR / (name + '.run'))}")
        return 0
    names = [a for a in argv if not a.startswith("--")]
    chosen = [t for t in templates() if not names or doc_of(t).stem in names or t.name in names]
    sections = [s for s in SECTIONS if not names or s[0].name in names or s[1].name in names]
    if "--check" in argv:
        found, checked = check(RESULTS_DIR, names)
        found += [p for s in sections for p in section_problems(*s)]
        print("\n".join(found) or f"{checked} documents and {len(sections)} sections match their runs.")
        return 1 if found else 0
    for template in chosen:
        doc_of(template).write_text(render(template), encoding="utf-8")
        print(f"wrote {doc_of(template)}")
    for document, template, run in sections:
        write_section(document, template, run)
        print(f"wrote the section of {document} made from {template.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
