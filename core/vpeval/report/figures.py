"""Report figures (matplotlib, the `vpeval[plots]` extra): DET curves here, and the figure kinds report
plugins draw (swept curves, EER against N, privacy against utility: vpeval-paper-report).

Every figure goes through `style()` and `save()`, so all of them (these and the report plugins') look alike
and are byte-identical across reruns: a PNG for report.md and a PDF beside it for papers, without
timestamps. The object-oriented API is used (no pyplot), so nothing global changes in the calling process.
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.names import file_name
from vpeval.report.extensions import report_plugins
from vpeval.report.select import pooled, protocol_sort_key

log = logging.getLogger("vpeval.report")

FIGURES_DIR = "figures"
SCORE_INDEX = "index.json"  # in the run folder's scores/: which file holds which anonymizer, attacker, protocol, N
PANEL_INCHES = (3.4, 3.0)
DPI = 150
DET_TICKS = (0.001, 0.01, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 0.9, 0.99)


@dataclass
class Figure:
    """A written figure: its PNG (embedded in report.md), its PDF and what report.md says about it."""

    png: Path
    pdf: Path
    title: str
    anonymizers: list[str] = field(default_factory=list)
    attackers: list[str] = field(default_factory=list)
    protocols: list[str] = field(default_factory=list)
    n: list[int] = field(default_factory=list)
    note: str = ""


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


STYLE = {
    "font.family": "DejaVu Sans",  # shipped with matplotlib: the same glyphs on every machine
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.4,
    "lines.markersize": 5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,  # TrueType in the PDF: text stays editable and searchable in papers
    "svg.hashsalt": "vpeval",
}
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")  # Okabe-Ito
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


@contextlib.contextmanager
def style() -> Iterator[None]:
    """The one look of every vpeval figure (matplotlib rc settings for the duration of the block)."""
    import matplotlib
    from cycler import cycler

    settings = dict(STYLE, **{"axes.prop_cycle": cycler(color=list(COLOURS))})  # colour-blind safe
    with matplotlib.rc_context(settings):
        yield


def new_figure(panels: int, rows: int = 1, sharey: bool = False):
    """A figure of `rows` x `panels` axes sized per panel (call inside `style()`)."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(PANEL_INCHES[0] * panels, PANEL_INCHES[1] * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, panels, squeeze=False, sharey=sharey)
    return fig, axes


def figure_legend(fig, axes) -> None:
    """One legend for the whole figure, below the panels, each label once."""
    entries: dict[str, Any] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        # As many columns as fit the figure's width (long system labels get fewer), so none is cut off.
        chars_per_inch = 18  # the legend's 7-point font, with the marker and spacing of each entry
        fit = int(fig.get_figwidth() * chars_per_inch // (max(len(label) for label in entries) + 6))
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center",
            ncols=max(1, min(len(entries), 3, fit)),
            frameon=False,
        )


def save(fig, folder: Path, name: str) -> tuple[Path, Path]:
    """PNG and PDF of `fig` under `folder`, with fixed metadata so reruns write identical bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = file_name(name)
    png, pdf = folder / f"{stem}.png", folder / f"{stem}.pdf"
    # bbox_inches="tight" keeps every artist (a wide legend too) inside the image.
    fig.savefig(png, dpi=DPI, metadata={"Software": None}, bbox_inches="tight")
    fig.savefig(
        pdf,
        metadata={"CreationDate": None, "ModDate": None, "Producer": None, "Creator": "vpeval"},
        bbox_inches="tight",
    )
    return png, pdf


# -- DET curves ---------------------------------------------------------------------------------------


def read_scores(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Scores and target flags of a Kaldi-style score file (enroll test score target|nontarget [gender])."""
    values, targets = [], []
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 4:
            values.append(float(fields[2]))
            targets.append(fields[3] == "target")
    return np.asarray(values, dtype=np.float64), np.asarray(targets, dtype=bool)


def det_points(scores: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """False-acceptance and miss rates at every threshold (a trial is accepted when its score exceeds it)."""
    order = np.argsort(scores, kind="mergesort")
    t = targets[order]
    n_target, n_nontarget = max(int(t.sum()), 1), max(int((~t).sum()), 1)
    miss = np.concatenate([[0.0], np.cumsum(t) / n_target])
    false_accept = np.concatenate([[1.0], 1.0 - np.cumsum(~t) / n_nontarget])
    return false_accept, miss


def det_figures(run_folder: Path, out: Path) -> list[Figure]:
    """One figure per anonymizer: a panel per protocol (and a row per N), the attackers overlaid."""
    from scipy.stats import norm

    index_file = run_folder / "scores" / SCORE_INDEX
    if not index_file.is_file():
        return []
    import json

    entries = json.loads(index_file.read_text())
    by_anonymizer: dict[str, list[dict]] = defaultdict(list)
    for e in entries:
        by_anonymizer[e["anonymizer"]].append(e)
    figures = []
    for anonymizer, items in by_anonymizer.items():
        protocols = sorted({e["protocol"] for e in items}, key=protocol_sort_key)
        ns = sorted({e["n"] for e in items})
        attackers = list(dict.fromkeys(e["attacker"] for e in items))
        with style():
            fig, axes = new_figure(len(protocols), len(ns))
            lim = norm.ppf([DET_TICKS[0], DET_TICKS[-1]])
            for e in items:
                ax = axes[ns.index(e["n"])][protocols.index(e["protocol"])]
                scores, targets = read_scores(run_folder / "scores" / e["file"])
                if not targets.any() or targets.all():
                    continue
                fa, miss = det_points(scores, targets)
                k = attackers.index(e["attacker"])
                ax.plot(
                    norm.ppf(np.clip(fa, DET_TICKS[0], DET_TICKS[-1])),
                    norm.ppf(np.clip(miss, DET_TICKS[0], DET_TICKS[-1])),
                    color=COLOURS[k % len(COLOURS)],
                    label=e["attacker"],
                )
            for i, n in enumerate(ns):
                for j, protocol in enumerate(protocols):
                    ax = axes[i][j]
                    ax.plot(lim, lim, color="0.6", linewidth=0.7, linestyle=":")  # where EER is read off
                    ticks = norm.ppf(DET_TICKS)
                    labels = [f"{100 * t:g}" for t in DET_TICKS]
                    ax.set_xticks(ticks, labels, rotation=90)
                    ax.set_yticks(ticks, labels)
                    ax.set_xlim(lim)
                    ax.set_ylim(lim)
                    ax.set_aspect("equal")
                    ax.set_title(f"{protocol}, N = {n}")
                    ax.set_xlabel("false acceptance rate (%)")
                    ax.set_ylabel("miss rate (%)")
            figure_legend(fig, axes)
            fig.suptitle(f"DET: attackers against {anonymizer}")
            png, pdf = save(fig, out, f"det__{anonymizer}")
        figures.append(Figure(png, pdf, f"DET curves against {anonymizer}", [anonymizer], attackers, protocols, ns))
    return figures


def report_figures(run_folder: Path, rows: list[dict[str, Any]]) -> list[Figure]:
    """Every figure the run's results allow, in run_folder/figures; none (and one log line) without matplotlib."""
    if not available():
        log.warning("report: no figures, because matplotlib is not installed (pip install 'vpeval[plots]')")
        return []
    out = run_folder / FIGURES_DIR
    for old in [*out.glob("*.png"), *out.glob("*.pdf")] if out.is_dir() else []:
        old.unlink()  # a rerun with fewer anonymizers leaves no stale figure behind
    rows = pooled(rows)  # the run's figures pool its evaluation sets
    return det_figures(run_folder, out) + [f for plugin in report_plugins() for f in plugin.figures(rows, out)]
