"""Trained attackers' training curves in the report, and the under-training alarm.

An attacker that was still improving when its training stopped is weaker than it could be, so the EER it
reaches overstates privacy: a reanalysis of VoicePrivacy 2024 (arXiv 2507.22534) found under-trained
attackers overestimating privacy by up to 74 %. Each trained attacker hands the core its curve
(`Attacker.training_curve()`: epochs with loss and validation EER as a fraction); the report prints it in %, and
the worst-case table marks an attacker its own record calls under-trained: the validation EER (the training
loss where none was recorded) still falling at the last epoch, or a validation EER at chance level. An attacker
whose validation EER reached 0 is perfect and never flagged.
"""

from __future__ import annotations

from typing import Any

STILL_FALLING = 0.02  # the last epoch at least 2 % (relative) below the one before, itself below its own before
CHANCE_EER = 0.45  # a validation EER (fraction) never below this is a coin toss (chance is 0.5)
WARNING = "may be under-trained, so the EER may overstate privacy"
UNDER_TRAINED = f"{WARNING}: its validation EER was still falling (see Training curves)"
MARK = "†"


def points(epochs: list[dict[str, Any]], key: str = "validation_eer") -> list[float]:
    """`key` over the curve's last stage, in epoch order (a staged attacker restarts per stage)."""
    last_stage = epochs[-1].get("stage") if epochs else None
    return [float(e[key]) for e in epochs if e.get("stage") == last_stage and isinstance(e.get(key), (int, float))]


def validation_points(epochs: list[dict[str, Any]]) -> list[float]:
    return points(epochs)


def training_doubt(epochs: list[dict[str, Any]]) -> str:
    """Why the attacker's own record says it may be under-trained, or "" when it does not."""
    eers = points(epochs)
    if eers and min(eers) == 0:
        return ""  # a perfect attacker: nothing left to learn
    if eers and min(eers) >= CHANCE_EER:
        return f"its validation EER never left chance level ({100 * min(eers):.1f} % at best)"
    series, what = (eers, "validation EER") if eers else (points(epochs, "loss"), "training loss")
    shown = (lambda v: f"{100 * v:.2f} %") if eers else (lambda v: f"{v:.4g}")
    if len(series) >= 2 and series[-2] - series[-1] >= STILL_FALLING * abs(series[-2]):
        if len(series) == 2 or series[-2] < series[-3]:
            return f"its {what} was still falling at its last epoch ({shown(series[-2])} -> {shown(series[-1])})"
    return ""


def under_trained(epochs: list[dict[str, Any]]) -> bool:
    return bool(training_doubt(epochs))


def curve_entries(curves: dict[tuple[str, str | None], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """results.json's `training`: one entry per trained attacker (and the system it trained on)."""
    entries = [
        {"attacker": a, "trained_on": system, "epochs": e, "why": training_doubt(e)}
        for (a, system), e in curves.items()
        if e
    ]
    return [{**e, "under_trained": bool(e["why"])} for e in entries]


def upper_bound_reasons(entries: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[tuple[str, str | None], str]:
    """(attacker, system it trained on) -> why its privacy figures are upper bounds: under-trained (its curve), or
    a gate metric's row on it saying so (details {"gate": {"fires": true, "reason": ...}}; a row of an attacker
    trained on original speech has anonymizer "none")."""
    why = {(e["attacker"], e["trained_on"]): e.get("why") for e in entries if e["under_trained"]}
    reasons = {
        key: [f"{WARNING}: {text} (see Training curves)" if text else UNDER_TRAINED] for key, text in why.items()
    }
    for r in rows:
        gate = (r.get("details") or {}).get("gate")
        if isinstance(gate, dict) and gate.get("fires"):
            key = (r["attacker"], None if r.get("anonymizer") in (None, "", "none") else r["anonymizer"])
            if str(gate.get("reason")) not in reasons.setdefault(key, []):
                reasons[key].append(str(gate.get("reason")))
    return {key: "; ".join(texts) for key, texts in reasons.items()}


def reason_for(marks: dict[tuple[str, str | None], str], attacker: str, anonymizer: str) -> str:
    return "; ".join(marks[k] for k in ((attacker, None), (attacker, anonymizer)) if k in marks)


def is_flagged(marks: set[tuple[str, str | None]], attacker: str, anonymizer: str) -> bool:
    """An attacker trained on original speech is flagged for every anonymizer; a semi-informed one for its system."""
    return (attacker, None) in marks or (attacker, anonymizer) in marks


def training_markdown(entries: list[dict[str, Any]]) -> list[str]:
    """One table, a row per trained attacker (and stage): its loss and validation EER in % per epoch, left to
    right, the kept epoch's in bold (its EER, its loss without one); under it the attackers its own record calls
    under-trained."""
    staged = any(r.get("stage") for e in entries for r in e["epochs"])
    header = ["attacker", "trained on"] + (["stage"] if staged else []) + ["epochs", "loss", "validation EER [%]"]
    body, notes = [], []
    for e in entries:
        for stage in dict.fromkeys(r.get("stage") for r in e["epochs"]):
            mine = [r for r in e["epochs"] if r.get("stage") == stage]
            eers = [_cell(r.get("validation_eer"), "{:.2f}", r.get("selected"), 100) for r in mine]
            losses = [_cell(r.get("loss"), "{:.4g}", r.get("selected") and not any(eers)) for r in mine]
            numbers = [r.get("epoch") for r in mine]
            span = (
                f"{numbers[0]}-{numbers[-1]}"
                if numbers == list(range(1, len(mine) + 1))
                else ", ".join(map(str, numbers))
            )
            cells = [e["attacker"], e["trained_on"] or "original"] + ([str(stage or "")] if staged else [])
            body.append(cells + [span, ", ".join(losses), ", ".join(eers) if any(eers) else ""])
        why = training_doubt(e["epochs"])
        if why:
            notes.append(
                f"**{MARK} {e['attacker']} {WARNING}**: {why}; train it longer before reading its EER as privacy."
            )
        if not validation_points(e["epochs"]):
            notes.append(
                f"{e['attacker']}: no validation EER was recorded, so convergence is judged on the training loss alone."
            )
    lines = ["| " + " | ".join(r) + " |" for r in [header, *body]]  # (tables.py imports this module)
    text = "\n".join(lines[:1] + ["|" + "---|" * len(header)] + lines[1:])
    return ["\n\n".join([text, *notes])]


def _cell(value, spec: str, kept: bool, scale: float = 1.0) -> str:
    """One epoch's value (bold for the kept epoch), or "" where it recorded none."""
    if not isinstance(value, (int, float)):
        return ""
    text = spec.format(scale * value)
    return f"**{text}**" if kept else text
