"""PAPER-FIDELITY.md and docs/ cannot drift from the code they cite (issue 40, deliverables 3 and 5).

Code is cited as `file.py::symbol` (a function, class, method, field or module constant defined in that file;
`Class.member` for a member), never by line number: a line number silently points elsewhere once the code
moves, a symbol that moves or is renamed fails here. A bare file name resolves against the package folder of
the PAPER-FIDELITY.md section it sits in, then the repository root, then the one file of that name in the
repository. Every PAPER-FIDELITY.md row names what shows it (a test or a document), and the summary line
counts the rows by status.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIDELITY = ROOT / "PAPER-FIDELITY.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
SYMBOL_REF = re.compile(r"((?:[\w.-]+/)*[\w-]+\.py)::([A-Za-z_][\w.]*)")
LINE_REF = re.compile(r"\.py:\d+|\.py,? (?:about |near )?lines? \d+|(?<![:\w])(?:about )?line \d+ of \S+\.py")
STATUSES = ("faithful", "deviation", "stand-in", "not in the paper", "missing")
SUMMARY = re.compile(
    r"^\*\*Summary:\*\* (\d+) rows: (\d+) faithful, (\d+) stated deviations, (\d+) stand-ins, "
    r"(\d+) not in the paper, (\d+) missing\.",
    re.M,
)
SKIP_DIRS = {".venv", ".git", "node_modules", "build", "dist", "__pycache__"}


@cache
def python_files() -> dict[str, list[Path]]:
    by_name: dict[str, list[Path]] = {}
    for path in ROOT.rglob("*.py"):
        if not SKIP_DIRS & set(path.relative_to(ROOT).parts):
            by_name.setdefault(path.name, []).append(path)
    return by_name


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Qualified names defined in a module: functions, classes, methods, class fields, module constants."""
    names: set[str] = set()

    def visit(body, prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(prefix + node.name)
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.Assign):
                names.update(prefix + t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(prefix + node.target.id)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")).body, "")
    return frozenset(names)


def resolve(file: str, bases: list[Path]) -> Path | None:
    for base in [*bases, ROOT]:
        if (base / file).is_file():
            return base / file
    candidates = [p for p in python_files().get(Path(file).name, []) if str(p).endswith(file)]
    return candidates[0] if len(candidates) == 1 else None


def symbol_defined(path: Path, symbol: str) -> bool:
    names = defined_names(path)
    return symbol in names or any(name.endswith("." + symbol) for name in names)


def fidelity_sections() -> list[tuple[list[Path], list[str]]]:
    """(package folders named in the section heading, the section's lines) per '## ' section."""
    sections: list[tuple[list[Path], list[str]]] = [([], [])]
    for line in FIDELITY.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            folders = [ROOT / m for m in re.findall(r"`([\w./-]+/)`", line)]
            sections.append((folders, []))
        sections[-1][1].append(line)
    return sections


def references() -> list[tuple[str, str, str, list[Path]]]:
    """(where, file, symbol, base folders) for every `file.py::symbol` in PAPER-FIDELITY.md and docs/."""
    found = []
    for bases, lines in fidelity_sections():
        for line in lines:
            found += [("PAPER-FIDELITY.md", f, s.rstrip("."), bases) for f, s in SYMBOL_REF.findall(line)]
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        found += [(str(doc.relative_to(ROOT)), f, s.rstrip("."), []) for f, s in SYMBOL_REF.findall(text)]
    return found


def test_every_code_reference_names_a_symbol_its_file_defines():
    refs = references()
    assert len(refs) > 100  # the table cites the code throughout
    wrong = []
    for where, file, symbol, bases in refs:
        path = resolve(file, bases)
        if path is None:
            wrong.append(f"{where}: {file}::{symbol}: no such file (or several of that name: give more of its path)")
        elif not symbol_defined(path, symbol):
            wrong.append(f"{where}: {file}::{symbol}: {path.relative_to(ROOT)} defines no {symbol}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("path", [FIDELITY, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_line_number_references(path):
    """Line numbers drift; cite file.py::symbol instead."""
    text = path.read_text(encoding="utf-8")
    hits = [m.group(0) for m in LINE_REF.finditer(text)]
    if path == FIDELITY:  # continuation references such as "params.py:12, :40" inside the code column
        hits += [f"row {row[1][:40]!r}: {m}" for row in table_rows() for m in re.findall(r"[\s,;(]:\d+", row[2])]
    assert not hits, f"{path.relative_to(ROOT)} cites code by line number: {hits}"


def test_no_machine_paths_for_the_papers():
    text = FIDELITY.read_text(encoding="utf-8")
    assert not re.search(r"(?<![\w.])/(?:work|home|tmp|Users|mnt)/", text), "name the papers by repository path"


def table_rows() -> list[list[str]]:
    """The cells of every PAPER-FIDELITY.md table row (header and separator rows left out)."""
    rows = []
    for line in FIDELITY.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| paper item"):
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def status_of(cell: str) -> str | None:
    for status in STATUSES:
        if cell.startswith(f"**{status}**"):
            return status
    return None


def test_every_row_has_a_status_and_names_what_shows_it():
    rows = table_rows()
    assert len(rows) > 80
    bad = []
    for cells in rows:
        if len(cells) != 5:
            bad.append(f"{cells[0][:40]!r}: {len(cells)} cells, not 5 (item, paper, code, status, shown by)")
            continue
        if status_of(cells[3]) is None:
            bad.append(f"{cells[0][:40]!r}: the status does not open with one of {STATUSES} in bold")
        shown = cells[4]
        if not shown:
            bad.append(f"{cells[0][:40]!r}: no test or document shows it")
        for target in re.findall(r"((?:[\w.-]+/)+[\w.-]+\.(?:md|yaml|json))", shown):
            if not (ROOT / target).is_file():
                bad.append(f"{cells[0][:40]!r}: {target} does not exist")
        if not re.search(r"\.py::|\.md|\.yaml|\.json", shown):
            bad.append(f"{cells[0][:40]!r}: 'shown by' names no test (file.py::test) or document")
    assert not bad, "\n".join(bad)


def test_summary_line_counts_the_table():
    counts = Counter(status_of(cells[3]) for cells in table_rows())
    match = SUMMARY.search(FIDELITY.read_text(encoding="utf-8"))
    assert match, "PAPER-FIDELITY.md has no '**Summary:** N rows: ...' line"
    total, *per_status = (int(x) for x in match.groups())
    assert total == sum(counts.values())
    assert dict(zip(STATUSES, per_status)) == {s: counts.get(s, 0) for s in STATUSES}
