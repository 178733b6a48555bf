"""Picking the rows a table or figure shows: protocol order, the headline gender, the EER metric."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

PROTOCOLS = ("O-O", "O-A", "A-A")
ANONYMIZED_PROTOCOLS = ("O-A", "A-A")  # the protocols whose trials hear anonymized speech


def protocol_sort_key(protocol: str) -> tuple[int, str]:
    return (PROTOCOLS.index(protocol), "") if protocol in PROTOCOLS else (len(PROTOCOLS), protocol)


def coordinate(row: dict[str, Any], dim: str) -> str:
    """A result's coordinate as printed ("" when the row has none): how tables, curves and findings
    group and select rows, so that `n: 5` in an experiment file matches N = 5."""
    value = row.get(dim)
    return "" if value is None else str(value)


def pooled(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows over all the run's evaluation sets: a run with several (VoicePrivacy's libri_dev and
    libri_test) has rows per set too, with a `dataset` coordinate; summaries that mean "the run" use these."""
    return [r for r in rows if r.get("dataset") is None]


def headline(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per result: the female/male average where a metric gives one (as VPAC ranks), else the
    pooled value ('all'); rows of other genders are left out."""
    groups: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for r in rows:
        key = (
            r.get("metric"),
            r.get("metric_plugin"),
            r.get("anonymizer"),
            r.get("attacker"),
            r.get("scenario"),
            r.get("protocol"),
            r.get("n"),
            _details_key(r),
            r.get("run"),
            r.get("dataset"),
        )
        groups[key][r.get("gender") or "all"] = r
    out = []
    for genders in groups.values():
        chosen = genders.get("avg") or genders.get("all")
        if chosen is not None:
            out.append(chosen)
    return out


def _details_key(row: dict[str, Any]) -> str:
    details = row.get("details") or {}
    return repr(
        sorted(
            (k, str(v)) for k, v in details.items() if isinstance(v, (str, int, float, bool)) and k in SETTING_DETAILS
        )
    )


# Details that tell two results of one metric apart (besides coordinates): a DCF's prior, an EER variant,
# a speech metric's system, protocol, split or class.
SETTING_DETAILS = ("p_target", "variant", "system", "protocol", "matrix", "class", "split", "speech")


def eer_metric(rows: list[dict[str, Any]]) -> str | None:
    """The EER metric of the run's attack rows: `eer` when present, else the first metric named like one."""
    names = sorted({r["metric"] for r in rows if r.get("protocol") and r.get("value") is not None})
    if "eer" in names:
        return "eer"
    return next((n for n in names if "eer" in n.split("-") or n.endswith("eer")), None)


def first_setting(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """Rows of one metric entry (label) and variant only, when a run computed it several ways; and a note
    naming the one kept, empty when there was only one."""
    settings = sorted(
        {
            (
                r.get("metric_plugin") or "",
                (r.get("details") or {}).get("variant") or "",
                str((r.get("details") or {}).get("p_target") or ""),
            )
            for r in rows
        }
    )
    if len(settings) <= 1:
        return rows, ""
    label, variant, prior = settings[0]
    kept = [
        r
        for r in rows
        if (
            r.get("metric_plugin") or "",
            (r.get("details") or {}).get("variant") or "",
            str((r.get("details") or {}).get("p_target") or ""),
        )
        == settings[0]
    ]
    words = [w for w in (label, f"variant {variant}" if variant else "", f"p_target {prior}" if prior else "") if w]
    return kept, "metric entry " + ", ".join(words)
