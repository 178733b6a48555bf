"""Trained attackers' training curves in the report, and the under-training alarm.

An attacker that was still improving when its training stopped is weaker than it could be, so the EER it
reaches overstates privacy: a reanalysis of VoicePrivacy 2024 (arXiv 2507.22534) found under-trained
attackers overestimating privacy by up to 74 %. Each trained attacker hands the core its curve
(`Attacker.training_curve()`: epochs with loss and validation EER); the report prints it, and the worst-case
table marks an attacker whose validation EER was still falling over its last epochs.
"""

from __future__ import annotations

from typing import Any

FALLING_EPOCHS = 3  # the last this many validation EERs each lower than the one before ...
FALLING_SHARE = 0.02  # ... and the last at least 2 % (relative) below the first of them
WARNING = "may be under-trained, so the EER may overstate privacy"
UNDER_TRAINED = f"{WARNING}: its validation EER was still falling (see Training curves)"
MARK = "†"


def validation_points(epochs: list[dict[str, Any]]) -> list[float]:
    """Validation EERs of the curve's last stage, in epoch order (a staged attacker restarts per stage)."""
    last_stage = epochs[-1].get("stage") if epochs else None
    return [
        float(e["validation_eer"])
        for e in epochs
        if e.get("stage") == last_stage and isinstance(e.get("validation_eer"), (int, float))
    ]


def under_trained(epochs: list[dict[str, Any]]) -> bool:
    """Whether the validation EER was still falling over the last epochs: each of the last FALLING_EPOCHS
    values below the one before, the last FALLING_SHARE (relative) below the first of them."""
    points = validation_points(epochs)[-FALLING_EPOCHS:]
    if len(points) < FALLING_EPOCHS:
        return False
    falling = all(later < earlier for earlier, later in zip(points, points[1:]))
    return falling and points[0] - points[-1] >= FALLING_SHARE * max(points[0], 1e-12)


def curve_entries(curves: dict[tuple[str, str | None], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """results.json's `training`: one entry per trained attacker (and the system it trained on)."""
    return [
        {"attacker": attacker, "trained_on": system, "epochs": epochs, "under_trained": under_trained(epochs)}
        for (attacker, system), epochs in curves.items()
        if epochs
    ]


def flagged(entries: list[dict[str, Any]]) -> set[tuple[str, str | None]]:
    """(attacker, system trained on) of the under-trained ones."""
    return {(e["attacker"], e["trained_on"]) for e in entries if e["under_trained"]}


def upper_bound_reasons(entries: list[dict[str, Any]], rows: list[dict[str, Any]]) -> dict[tuple[str, str | None], str]:
    """(attacker, system it trained on) -> why its privacy figures are upper bounds: under-trained (its curve), or
    a gate metric's row on it saying so (details {"gate": {"fires": true, "reason": ...}}; a row of an attacker
    trained on original speech has anonymizer "none")."""
    reasons = {key: [UNDER_TRAINED] for key in flagged(entries)}
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
    """One table per trained attacker: epoch, stage, loss, validation EER (the kept epoch marked)."""
    out = []
    for e in entries:
        title = f"### {e['attacker']}" + (f" on {e['trained_on']}" if e["trained_on"] else "")
        staged = any(r.get("stage") for r in e["epochs"])
        header = (["stage"] if staged else []) + ["epoch", "loss", "validation EER", "kept"]
        body = []
        for r in e["epochs"]:
            cells = [str(r.get("stage", ""))] if staged else []
            loss, eer = r.get("loss"), r.get("validation_eer")
            cells += [
                str(r.get("epoch", "")),
                f"{loss:.4g}" if isinstance(loss, (int, float)) else "",
                f"{eer:.4g}" if isinstance(eer, (int, float)) else "",
                "yes" if r.get("selected") else "",
            ]
            body.append(cells)
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in body]
        text = title + "\n\n" + "\n".join(lines)
        if e["under_trained"]:
            text += (
                f"\n\n**{MARK} {e['attacker']} {WARNING}**: its validation EER fell over each of its last "
                f"{FALLING_EPOCHS} epochs; train it longer (more epochs) before reading its EER as privacy."
            )
        elif not validation_points(e["epochs"]):
            text += "\n\nNo validation EER was recorded, so vpeval cannot tell whether training had converged."
        out.append(text)
    return out
