"""Report figures on a fake run: DET, EER against N and privacy-utility are written, embedded, reproducible."""

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from vpeval import hookimpl
from vpeval.api import Metric, MetricInputs
from vpeval.config import load_experiment_text
from vpeval.report import figures
from vpeval.run.runner import Runner
from vpeval.types import MetricResult
from vpeval_paper_report import figures as paper_figures

pytest.importorskip("matplotlib")

EXPERIMENT = """\
name: figures-test
seed: 3
data:
  corpus: {use: fake-corpus, params: {speakers: 12, utterances: 6}}
  attacker_train_speakers: 0.5
  target_trials_per_speaker: 3
  nontarget_trials_per_speaker: 3
anonymizers:
  - {use: fake-shift}
  - {use: fake-shift, label: gentle, params: {low: 1.05, high: 1.1}}
attackers:
  - {use: fake-spectrum, train_on: original}
  - {use: fake-spectrum, train_on: semi-informed, params: {bands: 24}}
protocols: [O-O, O-A, A-A]
enroll_utterances: [1, 2]
metrics: [fake-eer, fake-distortion]
"""


class FakeDistortion(Metric):
    """Stands in for WER in these tests: mean log-spectral distance (dB) of each utterance to its original,
    with the spread over utterances as the interval; 0 for the original speech."""

    name = "fake-distortion"
    needs = "speech"

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        out = [MetricResult("wer", 0.0, "all", ci_low=0.0, ci_high=0.0, unit="%", details={"speech": "original"})]
        if inputs.anonymized is not None:
            from fakes import log_spectral_distances

            distances = log_spectral_distances(inputs)
            mean, spread = float(np.mean(distances)), float(np.std(distances))
            out.append(
                MetricResult(
                    "wer",
                    mean,
                    "all",
                    ci_low=mean - spread,
                    ci_high=mean + spread,
                    unit="%",
                    details={"speech": "anonymized"},
                )
            )
        return out


class FigurePlugins:
    @hookimpl
    def register_metrics(self, register):
        register(FakeDistortion)


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory):
    import fakes

    from vpeval.plugins import get_plugin_manager

    manager = get_plugin_manager()
    manager.register_module(fakes, "vpeval-fakes", "1.0", name="vpeval-fakes:fakes")
    plugin = FigurePlugins()
    manager.register_module(plugin, "vpeval-figure-fakes", "1.0", name="vpeval-figure-fakes")
    tmp = tmp_path_factory.mktemp("figures")
    try:
        exp = load_experiment_text(EXPERIMENT, "exp.yaml")
        result = Runner(exp, cache_root=tmp / "cache", output=tmp / "run", quiet=True).run()
    finally:
        manager.unregister_module(plugin)
        manager.unregister_module(fakes)
    return result


def test_every_figure_is_written_as_png_and_pdf_and_embedded(fake_run):
    folder = fake_run.folder / "figures"
    expected = ["det__fake-shift", "det__gentle", "eer-vs-n__fake-shift", "eer-vs-n__gentle", "privacy-utility__A-A"]
    for stem in expected:
        png, pdf = folder / f"{stem}.png", folder / f"{stem}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, stem
        assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000, stem
    report = (fake_run.folder / "report.md").read_text()
    for stem in expected:
        assert f"](figures/{stem}.png)" in report and f"(figures/{stem}.pdf)" in report
    # Which data, models, scenario and protocol produced them: the report's one caption, under its title.
    caption = report.split("\n\n")[1]
    assert caption.startswith("*Data: corpus `fake-corpus`") and "gentle (`fake-shift`" in caption
    assert "semi-informed: trained on anonymized speech" in caption and caption.endswith(".*")


def test_results_and_warnings_come_first_and_each_caption_is_written_once(fake_run):
    """Issue 37, item 5: no caption line repeats, timings and provenance live in provenance.md (linked)."""
    report = (fake_run.folder / "report.md").read_text()
    order = ["## Drops and doubts", "## Worst case at a glance", "## Privacy (attacker) metrics", "## Figures"]
    assert [report.index(h) for h in order] == sorted(report.index(h) for h in order)
    captions = [line for line in report.splitlines() if line.startswith("*Data:")]
    assert len(captions) == 1
    assert "timings" not in report.split("## Drops")[1].lower() and "[provenance.md](provenance.md)" in report
    provenance = (fake_run.folder / "provenance.md").read_text()
    assert "## Stage timings (s)" in provenance and "| data |" in provenance and "| gentle | `fake-shift`" in provenance
    # One table per metric: the N are columns of it, not tables of their own.
    assert report.count("### fake-eer [%]") == 1 and "| O-O, N = 1 | O-A, N = 1 | A-A, N = 1 | O-O, N = 2 |" in report


def test_the_worst_case_table_comes_first(fake_run):
    report = (fake_run.folder / "report.md").read_text()
    first_table = report.index("\n| ")
    assert report.index("### Worst case for fake-shift") < first_table < report.index("## Figures")


def test_figures_are_byte_identical_when_drawn_again(fake_run, tmp_path):
    written = {p: p.read_bytes() for p in sorted((fake_run.folder / "figures").iterdir())}
    again = figures.report_figures(fake_run.folder, fake_run.rows)
    assert sorted(p for f in again for p in (f.png, f.pdf)) == list(written)
    for path, data in written.items():
        assert path.read_bytes() == data, path.name
    assert b"CreationDate" not in again[0].pdf.read_bytes()


def test_privacy_utility_points_carry_the_intervals_as_error_bars(fake_run, tmp_path, monkeypatch):
    drawn = []
    from matplotlib.axes import Axes

    original = Axes.errorbar

    def spy(self, x, y, *args, **kwargs):
        drawn.append((x, y, kwargs.get("xerr"), kwargs.get("yerr"), kwargs.get("label")))
        return original(self, x, y, *args, **kwargs)

    monkeypatch.setattr(Axes, "errorbar", spy)
    (figure,) = paper_figures.privacy_utility_figure(fake_run.rows, tmp_path)
    assert len(drawn) == 4, "one point per anonymizer and attacker"
    wer = {r["anonymizer"]: r for r in fake_run.rows if r["metric"] == "wer"}
    for x, _y, xerr, _yerr, label in drawn:
        anonymizer = label.split(" / ")[0]
        assert x == wer[anonymizer]["value"]
        assert xerr[0][0] == pytest.approx(wer[anonymizer]["value"] - wer[anonymizer]["ci_low"])
    assert figure.protocols == ["A-A"] and figure.n == [2]


def test_without_matplotlib_the_report_has_tables_and_one_log_line(fake_run, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    with caplog.at_level(logging.WARNING, logger="vpeval.report"):
        assert figures.report_figures(Path(fake_run.folder), fake_run.rows) == []
    assert [r.message for r in caplog.records if "matplotlib" in r.message] == [
        "report: no figures, because matplotlib is not installed (pip install 'vpeval[plots]')"
    ]


def test_det_points_follow_the_scores():
    scores = np.array([0.1, 0.4, 0.35, 0.8])
    targets = np.array([False, False, True, True])
    fa, miss = figures.det_points(scores, targets)
    # Thresholds below every score, then after 0.1, 0.35, 0.4, 0.8.
    assert fa.tolist() == [1.0, 0.5, 0.5, 0.0, 0.0]
    assert miss.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]


def test_sweep_curves_share_the_module_and_are_reproducible(tmp_path):
    panels = {
        "O-A": [
            paper_figures.Curve("dast", [1, 10, 100], [40.0, 30.0, 20.0], [35.0, 25.0, 15.0], [45.0, 35.0, 25.0]),
            paper_figures.Curve("spinv", [1, 10, 100], [45.0, 41.0, 38.0]),
        ],
        "A-A": [paper_figures.Curve("spinv", [1, 10, 100], [30.0, 22.0, 12.0])],
    }
    first = paper_figures.curve_figure(
        panels,
        tmp_path / "a",
        "sweep",
        title="EER against minutes of training speech",
        xlabel="minutes",
        ylabel="EER (%)",
        xticks=[1, 10, 100],
        xscale="log",
    )
    second = paper_figures.curve_figure(
        panels,
        tmp_path / "b",
        "sweep",
        title="EER against minutes of training speech",
        xlabel="minutes",
        ylabel="EER (%)",
        xticks=[1, 10, 100],
        xscale="log",
    )
    for a, b in zip(first, second):
        assert a.stat().st_size > 5_000 and a.read_bytes() == b.read_bytes()
