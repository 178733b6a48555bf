"""Every drop and doubt of a run, counted, for the top of report.md and the console.

Drops: audio the data scan skipped, data-plan notes (speakers left out, labels missing and the groups they
change), the warnings of the run's log (a submission's repairs) and what metrics skipped, from their
`skipped_<reason>` counts (WER's untranscribed utterances) or a `skipped` entry. Doubts: figures at a low
false-positive rate (min-DCF at a small p_target, TPR at a small FPR) and the non-target trials behind them,
warned below the rule of 30.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

# Doddington's rule of 30: an error rate is trusted (to about +-30 %, 90 % confidence) once 30 errors were
# counted, so a figure at false-positive rate p needs at least 30 / p non-target trials.
RULE_OF_30 = 30
RULE = (
    f"the rule of {RULE_OF_30} asks ({RULE_OF_30} false alarms at a false-positive rate p: {RULE_OF_30}/p non-targets)"
)
LOW_RATE_SETTINGS = {"min-dcf": "p_target", "tpr-at-fpr": "fpr"}  # the figures read at a low false-positive rate
NOTHING = "Nothing was dropped: no audio, speaker, label or utterance was left out."


def drops_and_doubts(payload: dict[str, Any]) -> list[str]:
    """One line per drop or doubt of the run (results.json's contents), or one line saying there is none."""
    lines = _skipped_audio(payload.get("skipped_audio") or [])
    lines += [f"Data plan: {note}." for note in payload.get("plan_notes") or []]
    lines += [f"Logged: {warning}" for warning in payload.get("log_warnings") or []]  # repairs, fallbacks
    lines += metric_skips(payload.get("rows") or [])
    lines += [
        f"Trials at N = {n}: {missing} of {total} have no gender label; they count in the pooled figures but in "
        "no f or m figure, so not in the f/m average shown first."
        for n, (missing, total) in (payload.get("unlabelled_trials") or {}).items()
        if 0 < missing < total
    ]
    return (lines or [NOTHING]) + low_rate_counts(payload.get("rows") or [])


def logged_warnings(log: Path) -> list[str]:
    """The plugins' warnings in the run's log (run.log), once each: what a plugin repaired or fell back on (a
    submission's wav.scp built from its files) is read where the results are, not only in the log. The core's
    own warnings (logger `vpeval`: skipped audio, plan notes) are counted above already."""
    if not log.is_file():
        return []
    found = re.findall(r"^\S+ \S+ WARNING (\S+): (.*)$", log.read_text(encoding="utf-8", errors="replace"), re.M)
    return list(dict.fromkeys(message for name, message in found if name.startswith("vpeval.")))


def _skipped_audio(skipped: list[dict[str, str]]) -> list[str]:
    if not skipped:
        return []
    reasons = "; ".join(f"{c} {why}" for why, c in sorted(Counter(s.get("reason", "?") for s in skipped).items()))
    first = ", ".join(s.get("utterance", "?") for s in skipped[:3]) + (", ..." if len(skipped) > 3 else "")
    return [f"Data: {len(skipped)} audio files skipped as unusable (on_bad_audio: skip): {reasons} ({first})."]


def metric_skips(rows: list[dict[str, Any]]) -> list[str]:
    """What each metric left out, per input and reason, counted once per result (not per gender row)."""
    counts: dict[tuple, int] = {}
    for r in rows:
        details = r.get("details") or {}
        where = tuple(r.get(k) or "" for k in ("anonymizer", "attacker", "protocol", "n", "dataset"))
        stage = (r.get("metric_plugin") or r.get("metric"), details.get("speech") or "", where)
        for key, value in details.items():
            if key.startswith("skipped_") and isinstance(value, int) and not isinstance(value, bool) and value > 0:
                counts[(*stage, key.removeprefix("skipped_").replace("_", " "))] = value
        skipped = details.get("skipped")
        if isinstance(skipped, dict) and isinstance(skipped.get("speakers"), list) and skipped["speakers"]:
            counts[(*stage, f"speakers: {skipped.get('reason', 'no reason given')}")] = len(skipped["speakers"])
    lines = []
    for (metric, speech, (anonymizer, attacker, protocol, n, dataset), reason), count in counts.items():
        on = ", ".join(str(p) for p in (speech or anonymizer, attacker, protocol, n and f"N = {n}", dataset) if p)
        unit = "" if reason.startswith("speakers") else " utterances"
        lines.append(f"Metric {metric} ({on}): {count}{unit} skipped ({reason}).")
    return lines


def low_rate_counts(rows: list[dict[str, Any]]) -> list[str]:
    """Per low-false-positive figure (metric and rate): the non-target trials behind it, warned below the rule."""
    counts: dict[tuple[str, float], list[float]] = defaultdict(list)
    unknown: set[tuple[str, float]] = set()
    for r in rows:
        setting = LOW_RATE_SETTINGS.get(r.get("metric", ""))
        rate = (r.get("details") or {}).get(setting)
        if setting is None or not isinstance(rate, (int, float)) or r.get("gender") == "avg":
            continue
        non_targets = (r.get("details") or {}).get("non_targets")
        if isinstance(non_targets, (int, float)):
            counts[(r["metric"], float(rate))].append(float(non_targets))
        else:
            unknown.add((r["metric"], float(rate)))
    lines = []
    for (metric, rate), found in sorted(counts.items()):
        needed = RULE_OF_30 / rate
        span = f"{min(found):,.0f}" + (f" to {max(found):,.0f}" if max(found) != min(found) else "")
        name = f"{metric} at {LOW_RATE_SETTINGS[metric]} {rate:g}"
        if min(found) < needed:
            lines.append(
                f"**Warning**: {name} rests on {span} non-target trials per figure (f, m and pooled), fewer than "
                f"the {needed:,.0f} {RULE}; read it as a rough indication."
            )
        else:
            lines.append(f"{name}: {span} non-target trials per figure, at least the {needed:,.0f} {RULE}.")
    unrecorded = sorted(unknown - set(counts))
    return lines + [
        f"{m} at {LOW_RATE_SETTINGS[m]} {p:g}: its non-target trials were not recorded." for m, p in unrecorded
    ]
