"""Curves against a swept quantity (the declared curves are drawn with them), and the figures every run gets
from its result rows: seed 000's EER against N, and privacy against utility. Drawn with the core's figure
style (`vpeval.report.figures`), so they look like its DET curves and are byte-identical across reruns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpeval.report.figures import COLOURS, MARKERS, Figure, figure_legend, new_figure, save, style
from vpeval.report.select import ANONYMIZED_PROTOCOLS, eer_metric, first_setting, headline, protocol_sort_key
from vpeval_paper_report import privacy_utility


@dataclass
class Curve:
    """One line of a panel: y against x, with an optional interval (shaded)."""

    label: str
    x: list[float]
    y: list[float]
    low: list[float] | None = None
    high: list[float] | None = None


def curve_figure(
    panels: dict[str, list[Curve]],
    out: Path,
    name: str,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    xticks: list[float] | None = None,
    xscale: str = "linear",
) -> tuple[Path, Path]:
    """Lines against a swept quantity, a panel per condition on one y scale: EER against N and the declared
    curves (training data size, utterance duration, ...). Each label keeps one colour and
    marker across panels; written as PNG and PDF through `save()`."""
    labels = list(dict.fromkeys(c.label for curves in panels.values() for c in curves))
    with style():
        fig, axes = new_figure(len(panels), sharey=True)
        for j, (panel, curves) in enumerate(panels.items()):
            ax = axes[0][j]
            for c in curves:
                k = labels.index(c.label)
                colour = COLOURS[k % len(COLOURS)]
                ax.plot(c.x, c.y, marker=MARKERS[k % len(MARKERS)], color=colour, label=c.label)
                if c.low is not None and c.high is not None:
                    ax.fill_between(c.x, c.low, c.high, color=colour, alpha=0.15, linewidth=0)
            ax.set_xscale(xscale)
            if xticks is not None:
                ax.set_xticks(xticks, [f"{v:g}" for v in xticks])
            ax.set_title(panel)
            ax.set_xlabel(xlabel)
            if j == 0:  # the panels share the axis
                ax.set_ylabel(ylabel)
        figure_legend(fig, axes)
        fig.suptitle(title)
        return save(fig, out, name)


def eer_vs_n_figures(rows: list[dict[str, Any]], out: Path) -> list[Figure]:
    """Seed 000's Figure 1 layout per anonymizer: EER against the number of enrollment utterances N,
    O-A left and A-A right, one line per attacker with its interval shaded. Only for runs with several N."""
    metric = eer_metric(rows)
    if metric is None:
        return []
    chosen, note = first_setting(
        [
            r
            for r in headline(rows)
            if r["metric"] == metric
            and r.get("protocol") in ANONYMIZED_PROTOCOLS
            and r.get("value") is not None
            and r.get("n") is not None
        ]
    )
    if len({r["n"] for r in chosen}) < 2:
        return []
    figures = []
    for anonymizer in dict.fromkeys(r["anonymizer"] for r in chosen):
        mine = [r for r in chosen if r["anonymizer"] == anonymizer]
        protocols = sorted({r["protocol"] for r in mine}, key=protocol_sort_key)
        attackers = list(dict.fromkeys(r["attacker"] for r in mine))
        panels = {}
        for protocol in protocols:
            panels[protocol] = []
            for attacker in attackers:
                line = sorted(
                    (r for r in mine if r["protocol"] == protocol and r["attacker"] == attacker), key=lambda r: r["n"]
                )
                if not line:
                    continue
                interval = all(r.get("ci_low") is not None and r.get("ci_high") is not None for r in line)
                panels[protocol].append(
                    Curve(
                        attacker,
                        [r["n"] for r in line],
                        [r["value"] for r in line],
                        [r["ci_low"] for r in line] if interval else None,
                        [r["ci_high"] for r in line] if interval else None,
                    )
                )
        ns = sorted({r["n"] for r in mine})
        png, pdf = curve_figure(
            panels,
            out,
            f"eer-vs-n__{anonymizer}",
            title=f"{metric} against N: attackers against {anonymizer}",
            xlabel="enrollment utterances N",
            ylabel=f"{metric} ({mine[0].get('unit') or ''})".replace(" ()", ""),
            xticks=ns,
        )
        figures.append(
            Figure(png, pdf, f"{metric} against N against {anonymizer}", [anonymizer], attackers, protocols, ns, note)
        )
    return figures


def privacy_utility_figure(
    rows: list[dict[str, Any]], out: Path, protocol: str | None = None, n: int | None = None
) -> list[Figure]:
    """EER (of `protocol`, default A-A where computed, else O-A; at N `n`, default the largest) against
    each utility metric the run has (WER, UAR): one point per anonymizer and attacker, intervals as error bars."""
    chosen = privacy_utility.select(rows, protocol, n)
    if chosen is None:
        return []
    metric, protocol, n, privacy = chosen.metric, chosen.protocol, chosen.n, chosen.privacy
    anonymizers = list(dict.fromkeys(r["anonymizer"] for r in privacy))
    attackers = list(dict.fromkeys(r["attacker"] for r in privacy))
    points = []
    for r in privacy:
        utility = chosen.utility_of(r["anonymizer"])
        a, k = anonymizers.index(r["anonymizer"]), attackers.index(r["attacker"])
        points.append(
            privacy_utility.Point(
                r,
                {m: u for m, u in utility.items() if u is not None},
                f"{r['anonymizer']} / {r['attacker']}",
                MARKERS[a % len(MARKERS)],
                COLOURS[k % len(COLOURS)],
            )
        )
    reference = {m: u["value"] for m, u in chosen.utility_of("original").items() if u is not None}
    unit = privacy[0].get("unit") or "" if privacy else ""
    files = privacy_utility.draw(
        points,
        list(chosen.utility),
        out,
        f"privacy-utility__{protocol}",
        ylabel=f"{metric} {protocol}, N = {n} ({unit})".replace(" ()", "") if privacy else metric,
        title=f"Privacy ({metric}, {protocol}) against utility",
        metric=metric,
        reference=reference,
    )
    if files is None:
        return []
    return [
        Figure(
            *files,
            f"Privacy ({metric}, {protocol}) against utility ({', '.join(chosen.utility)})",
            anonymizers,
            attackers,
            [protocol],
            [n] if n is not None else [],
            chosen.note,
        )
    ]
