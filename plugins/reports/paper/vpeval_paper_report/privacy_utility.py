"""Privacy (an EER) against utility (WER, UAR): which rows a figure plots and how it draws them, for one run's own
figure (figures.privacy_utility_figure) and for one figure over several runs (`privacy_utility_across_runs`, seed
003's Figure 6: the VPC 2024 baselines of one run beside the proposed systems of another, the original speech as
a point of its own)."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vpeval.errors import DataError
from vpeval.report.figures import COLOURS, figure_legend, new_figure, save, style
from vpeval.report.select import ANONYMIZED_PROTOCOLS, eer_metric, first_setting, headline, pooled

UTILITY_METRICS = ("wer", "uar")
# Seed 003's Figure 6: the first run's systems blue triangles (the baselines), the second's red stars (proposed)
GROUP_MARKERS = ("^", "*", "s", "D", "v", "P", "X")
ORIGINAL_MARKER, ORIGINAL_COLOUR = "o", "0.5"  # the unprocessed speech: a grey circle
CSV_COLUMNS = (
    "x_metric",
    "x",
    "y_metric",
    "y",
    "system",
    "group",
    "run",
    "protocol",
    "attacker",
    "n",
)  # a line a point


@dataclass
class Selection:
    """What a run's pooled rows give a privacy-utility figure: the EER rows of one protocol and N (one setting)
    and each utility metric's rows (one setting, one per speech)."""

    metric: str
    protocol: str
    n: int | None
    note: str
    privacy: list[dict[str, Any]]
    utility: dict[str, list[dict[str, Any]]]

    def utility_of(self, system: str) -> dict[str, dict[str, Any] | None]:
        """Each utility metric's row of `system` (an anonymizer's label, or "original"), None where it has none."""
        return {m: next((r for r in rows if r["anonymizer"] == system), None) for m, rows in self.utility.items()}


def select(
    rows: list[dict[str, Any]],
    protocol: str | None = None,
    n: int | None = None,
    attacker: str | None = None,
    utility_metrics: tuple[str, ...] = UTILITY_METRICS,
) -> Selection | None:
    """EER rows of `protocol` (default A-A where computed, else O-A) at N `n` (default the largest), of `attacker`
    only where given, and the rows of each utility metric the run has (pooled: a `sets` metric's rows per set, with
    details.dataset, are left out); None without an EER or a utility metric."""
    metric = eer_metric(rows)
    if metric is None:
        return None
    main = headline([r for r in rows if r.get("value") is not None])
    privacy = [r for r in main if r["metric"] == metric and r.get("protocol") in ANONYMIZED_PROTOCOLS]
    privacy = [r for r in privacy if attacker is None or r["attacker"] == attacker]
    protocol = protocol or next((p for p in ("A-A", "O-A") if any(r["protocol"] == p for r in privacy)), None)
    whole = [r for r in main if not r.get("protocol") and not (r.get("details") or {}).get("dataset")]  # not per set
    utility = {m: first_setting([r for r in whole if r["metric"] == m])[0] for m in utility_metrics}
    utility = {m: rs for m, rs in utility.items() if rs}
    if protocol is None or not utility:
        return None
    privacy = [r for r in privacy if r["protocol"] == protocol]
    n = n if n is not None else max((r["n"] for r in privacy if r.get("n") is not None), default=None)
    privacy, note = first_setting([r for r in privacy if r.get("n") == n])
    return Selection(metric, protocol, n, note, privacy, utility)


@dataclass
class Point:
    """One drawn point: an EER row (y) against a row per utility metric (x), with its look."""

    privacy: dict[str, Any]
    utility: dict[str, dict[str, Any]]
    legend: str
    marker: str
    colour: str
    text: str = ""  # written beside the point (the system, where the legend names only its group)
    group: str = ""
    run: str = ""


def draw(
    points: list[Point],
    utility_metrics: list[str],
    out: Path,
    name: str,
    *,
    ylabel: str,
    title: str,
    metric: str,
    reference: dict[str, float] | None = None,
) -> tuple[Path, Path] | None:
    """A panel per utility metric, each point with its interval as error bars and `reference` (utility of the
    original speech) as a dashed line; PNG and PDF through save(), None where no point has a utility."""
    with style():
        fig, axes = new_figure(len(utility_metrics))
        drawn = False
        for j, name_u in enumerate(utility_metrics):
            ax = axes[0][j]
            unit = ""
            for p in points:
                u = p.utility.get(name_u)
                if u is None:
                    continue
                unit = unit or u.get("unit") or ""
                ax.errorbar(
                    u["value"],
                    p.privacy["value"],
                    xerr=_error(u),
                    yerr=_error(p.privacy),
                    fmt=p.marker,
                    color=p.colour,
                    capsize=2,
                    elinewidth=0.8,
                    label=p.legend,
                    **({"markersize": 8} if p.marker == "*" else {}),  # a star reads smaller than the others
                )
                if p.text:
                    ax.annotate(p.text, (u["value"], p.privacy["value"]), xytext=(3, 3), textcoords="offset points",
                                fontsize=6)  # fmt: skip
                drawn = True
            if reference and name_u in reference:  # the unanonymized speech's utility, for reference
                ax.axvline(reference[name_u], color="0.5", linestyle="--", linewidth=0.8, label="original speech")
            ax.set_xlabel(f"{name_u} ({unit})" if unit else name_u)
            ax.set_ylabel(ylabel)
            ax.set_title(f"{metric} against {name_u}")
        if not drawn:
            return None
        figure_legend(fig, axes)
        fig.suptitle(title)
        return save(fig, out, name)


def _error(row: dict[str, Any]):
    """Asymmetric error bar [[below], [above]] from a row's interval, or None without one."""
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return None
    return [[max(row["value"] - row["ci_low"], 0.0)], [max(row["ci_high"] - row["value"], 0.0)]]


# -- one figure over several runs ---------------------------------------------------------------------------


@dataclass
class AcrossRuns:
    """The written figure over several runs: its files, what it plots, and what was not drawn (systems in several
    runs are drawn once, from the first run that has them; systems left out on request)."""

    png: Path
    pdf: Path
    csv: Path
    points: list[Point]
    not_drawn: list[str] = field(default_factory=list)  # one sentence each


def privacy_utility_across_runs(
    runs: list[tuple[str, str, list[dict[str, Any]]]],
    out: Path,
    name: str = "privacy-utility",
    *,
    protocol: str = "A-A",
    attacker: str | None = None,
    original_attacker: str | None = None,
    utility_metrics: tuple[str, ...] = UTILITY_METRICS,
    leave_out: tuple[str, ...] = (),
) -> AcrossRuns:
    """One figure over `runs` (folder, group, rows as in results.json): per utility metric a panel of the EER
    of `protocol` by `attacker` against that utility, one point per system, coloured and shaped by its run's group;
    the original speech a grey circle (EER of O-O by `original_attacker`, default `attacker`, against the original
    speech's utility). Systems in `leave_out` are not drawn (each said in `not_drawn`). Writes NAME.png, NAME.pdf
    and NAME.csv (the plotted points) into `out`; DataError with one sentence for a run that lacks what the figure
    needs."""
    points: list[Point] = []
    seen: dict[str, Point] = {}
    duplicates: list[str] = []
    left_out: list[str] = []
    metric = None
    for k, (folder, group, rows) in enumerate(runs):
        rows = pooled(rows)
        chosen = _run_selection(folder, rows, protocol, attacker, utility_metrics)
        metric = metric or chosen.metric
        marker, colour = GROUP_MARKERS[k % len(GROUP_MARKERS)], COLOURS[k % len(COLOURS)]
        mine = [
            Point(
                r, _utility_of(folder, chosen, r["anonymizer"]), group, marker, colour, r["anonymizer"], group, folder
            )
            for r in chosen.privacy
        ]
        original = _original_point(folder, rows, chosen, original_attacker or attacker)
        if original is not None:
            mine.insert(0, original)
        for p in mine:
            if p.text in leave_out:
                left_out.append(f"{p.text} of {folder} is left out (--leave-out)")
                continue
            first = seen.get(p.text)
            if first is None:
                seen[p.text] = p
                points.append(p)
            else:
                same = _values(first) == _values(p)
                duplicates.append(
                    f"{p.text} is in {first.run} and {folder}: drawn from {first.run}"
                    + (" (the same values)" if same else f" (values {_values(first)} there, {_values(p)} here)")
                )
    if "original" not in leave_out and not any(p.text == "original" for p in points):
        raise DataError(
            f"None of the runs has {metric} rows of O-O by attacker {original_attacker or attacker} (the original "
            "speech's point); run one with protocol O-O, or name an attacker that has them with --original-attacker."
        )
    attackers = sorted({p.privacy["attacker"] for p in points if p.text != "original"})
    ylabel = f"{metric} {protocol}, original O-O ({points[0].privacy.get('unit') or ''})".replace(" ()", "")
    title = f"Privacy ({metric}, {protocol}, {', '.join(attackers)}) against utility"
    files = draw(points, list(utility_metrics), out, name, ylabel=ylabel, title=title, metric=metric)
    png, pdf = files  # every point has every utility (_utility_of refuses otherwise)
    table = out / f"{name}.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for m in utility_metrics:
            for p in points:
                r = p.privacy
                n = "" if r.get("n") is None else r["n"]
                x, y = repr(p.utility[m]["value"]), repr(r["value"])
                writer.writerow([m, x, r["metric"], y, p.text, p.group, p.run, r["protocol"], r["attacker"], n])
    return AcrossRuns(png, pdf, table, points, duplicates + left_out)


def _run_selection(folder, rows, protocol, attacker, utility_metrics) -> Selection:
    chosen = select(rows, protocol, attacker=attacker, utility_metrics=utility_metrics)
    metric = eer_metric(rows)
    if metric is None:
        raise DataError(f"{folder}/results.json has no EER rows: the privacy-utility figure plots an EER.")
    if chosen is None or not chosen.privacy:
        by = f" by attacker {attacker}" if attacker else ""
        raise DataError(
            f"{folder}/results.json has no {metric} rows of {protocol}{by}: run its experiment with that protocol "
            "and attacker, or choose others with --protocol and --attacker."
        )
    missing = [m for m in utility_metrics if m not in chosen.utility]
    if missing:
        raise DataError(
            f"{folder}/results.json has no {' or '.join(missing)} rows: the figure plots {metric} against "
            f"{', '.join(utility_metrics)}, so run its experiment with those metrics (or choose others with --utility)."
        )
    if len({r["anonymizer"] for r in chosen.privacy}) < len(chosen.privacy):
        raise DataError(
            f"{folder}/results.json has several {metric} rows of {protocol} per system (one per attacker): "
            "choose one attacker with --attacker."
        )
    return chosen


def _utility_of(folder, chosen: Selection, system: str) -> dict[str, dict[str, Any]]:
    utility = chosen.utility_of(system)
    for m, row in utility.items():
        if row is None:
            raise DataError(f"{folder}/results.json has no {m} row of {system}: the figure needs one per system.")
    return utility


def _original_point(folder, rows, chosen: Selection, attacker: str | None) -> Point | None:
    """The original speech's point where the run has O-O rows of `attacker` (the same for every system: an
    attacker trained on each system's speech gives several, so it is refused) and the original's utility."""
    main = headline([r for r in rows if r.get("value") is not None])
    oo = [
        r
        for r in main
        if r["metric"] == chosen.metric
        and r.get("protocol") == "O-O"
        and (attacker is None or r["attacker"] == attacker)
        and r.get("n") == chosen.n
    ]
    oo = first_setting(oo)[0]
    if not oo:
        return None
    if len({r["value"] for r in oo}) > 1:
        who = f"attacker {attacker}" if attacker else "its attackers"
        raise DataError(
            f"{folder}/results.json: the O-O {chosen.metric} of {who} differs between systems (an attacker trained "
            "on each system's speech), so it gives no one point for the original speech; name a pretrained "
            "attacker with --original-attacker."
        )
    row = {**oo[0], "anonymizer": "original"}
    utility = chosen.utility_of("original")
    if any(u is None for u in utility.values()):
        return None
    return Point(row, utility, "original speech", ORIGINAL_MARKER, ORIGINAL_COLOUR, "original", "original", folder)


def _values(p: Point) -> tuple[float, ...]:
    return (p.privacy["value"], *(u["value"] for u in p.utility.values()))
