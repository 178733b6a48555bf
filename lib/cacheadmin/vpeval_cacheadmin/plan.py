"""`vpeval validate --plan`: every cached step a run would take, cached or to compute, with recorded times.

The plan comes from the runner itself (`Runner.plan`): it runs the data stage, which loads, scans and
fingerprints the corpus (fingerprints are cached, so this is quick the second time), then takes every
other stage in the run's order computing its key but not its value. Every key vpeval computes chains its
inputs' keys and the plan, not the inputs' values (a model's key is what it was trained on, not its
weights), so every key is known before the run and none is marked "depends on".
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from vpeval.run.cache import STAGES
from vpeval.run.runner import Runner
from vpeval.schema import ResolvedExperiment
from vpeval_cacheadmin.entries import UNKNOWN, cache_root, read_note, scan


def planned_steps(resolved: ResolvedExperiment, root: Path) -> dict[tuple[str, str], str]:
    """(stage, key) -> label of each step of the experiment's run, in run order."""
    return _plan(resolved, root)[0]


def _plan(resolved: ResolvedExperiment, root: Path) -> tuple[dict[tuple[str, str], str], dict[str, list[str]]]:
    """The steps, and the plugins each key names (its trial lists and log go to a scratch folder)."""
    with tempfile.TemporaryDirectory(prefix="vpeval-plan-") as scratch:
        runner = Runner(resolved, cache_root=root, output=scratch, quiet=True)
        return runner.plan(), runner.cache.plugins


def _took(note: dict | None, verb: str = "built in") -> str:
    if not note or not isinstance(note.get("seconds"), (int, float)):
        return f"build time {UNKNOWN}"
    created = str(note.get("created", ""))[:16].replace("T", " ")  # ISO, UTC: minutes are enough here
    return f"{verb} {note['seconds']:.1f} s" + (f", {created} UTC" if created else "")


def plan_text(resolved: ResolvedExperiment, folder: str | Path | None) -> str:
    """`vpeval validate --plan`: each step, cached (with its recorded build time) or to compute (with the time the
    cache recorded for a step of the same stage and label, else of the same stage and plugins), and the totals."""
    root = cache_root(folder)
    steps, plugins = _plan(resolved, root)
    # The latest note of each (stage, label) and (stage, plugins) among the cache's entries: a step to compute's
    # estimate (the same attacker with other parameters, say).
    earlier: dict[tuple[str, str], dict] = {}
    for entry in sorted(scan(root), key=lambda e: e.last_used):
        if entry.note is not None and isinstance(entry.note.get("label"), str):
            earlier[(entry.stage, entry.note["label"])] = earlier[(entry.stage, entry.plugins)] = entry.note
    lines = ["plan (data: loaded, scanned and fingerprinted at every run; then each cached step in run order):"]
    cached = estimate = 0.0
    counts = {"cached": 0, "to compute": 0}
    for (stage, key), label in steps.items():
        folder = root / stage / key[:2]
        if (folder / key).is_dir():
            note = read_note(folder, key)
            counts["cached"] += 1
            cached += (note or {}).get("seconds", 0) or 0
            lines.append(f"  {stage:<9} {label}: cached ({_took(note)})")
        else:
            counts["to compute"] += 1
            before = earlier.get((stage, label)) or earlier.get((stage, ", ".join(plugins.get(key, [])) or UNKNOWN))
            if before is not None:
                estimate += before.get("seconds", 0) or 0
            hint = f" ('{before['label']}' {_took(before, 'took')})" if before else ""
            lines.append(f"  {stage:<9} {label}: to compute{hint}")
    by_stage = {s: sum(1 for st, _ in steps if st == s) for s in STAGES}
    lines.append(
        f"{len(steps)} steps ({', '.join(f'{n} {s}' for s, n in by_stage.items() if n)}): {counts['cached']} cached "
        f"(built in {cached:.1f} s in all), {counts['to compute']} to compute"
        + (f" (those with a recorded time took {estimate:.1f} s)" if estimate else "")
    )
    return "\n".join(lines)
