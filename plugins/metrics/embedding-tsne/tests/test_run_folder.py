"""embedding-tsne in a whole run: its maps (PNG, PDF, CSV) land in the run folder's figures/, are listed in report.md,
and a second run served from the cache gets them too; a map whose cached files are gone is said, not dropped."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from vpeval import hookimpl
from vpeval.api import Anonymizer, CorpusSource, Voice
from vpeval.config import load_experiment_text
from vpeval.run.runner import Runner
from vpeval.testing.contracts import ReportContract
from vpeval.types import Corpus
from vpeval_embedding_tsne.metric import EmbeddingTsne

pytest.importorskip("matplotlib")

EXPERIMENT = """\
name: tsne-run
seed: 3
data:
  corpus: {use: emotional-test-corpus}
  attacker_train_speakers: 0
anonymizers:
  - {use: pitch-test-shift, label: shifted}
attackers: []
protocols: [O-O]
metrics:
  - use: embedding-tsne
    label: figure4
    params: {embedding: encoder, encoder: {use: bands}, perplexity: 5.0, max_iter: 250}
"""


class PitchShift(Anonymizer):
    """Every pitch times 1.4, by resampling (what conftest's `shift` does to a corpus)."""

    name = "pitch-test-shift"

    def anonymize(self, audio: np.ndarray, sample_rate: int, voice: Voice) -> np.ndarray:
        positions = np.arange(len(audio)) * 1.4
        return np.interp(positions % len(audio), np.arange(len(audio)), audio).astype(np.float32)


@pytest.fixture
def plugins(write_emotional_corpus, band_encoder):
    from vpeval.plugins import get_plugin_manager

    class EmotionalCorpus(CorpusSource):
        """conftest's emotional harmonic bursts (4 speakers, 4 emotions, 2 each), written into the work folder."""

        name = "emotional-test-corpus"

        def load(self) -> Corpus:
            return write_emotional_corpus(self.context.folder("audio"))

    class TestPlugins:
        @hookimpl
        def register_corpora(self, register):
            register(EmotionalCorpus)

        @hookimpl
        def register_anonymizers(self, register):
            register(PitchShift)

        @hookimpl
        def register_encoders(self, register):
            register(band_encoder)

    manager = get_plugin_manager()
    plugin = TestPlugins()
    manager.register_module(plugin, "vpeval-tsne-test-plugins", "1.0", name="vpeval-tsne-test-plugins")
    try:
        yield
    finally:
        manager.unregister_module(plugin)


def run(tmp_path: Path, folder: str):
    exp = load_experiment_text(EXPERIMENT, "exp.yaml")
    return Runner(exp, cache_root=tmp_path / "cache", output=tmp_path / folder, quiet=True).run()


def test_the_maps_land_in_the_run_folder_also_from_the_cache(tmp_path, plugins, monkeypatch):
    first = run(tmp_path, "first")
    rows = [r for r in first.rows if r["metric"] == "embedding-tsne-encoder"]
    sources = {r["anonymizer"]: r["details"] for r in rows}
    assert set(sources) == {"original", "shifted"}
    figures = first.folder / "figures"
    report = (first.folder / "report.md").read_text()
    for suffix, key in ((".png", "figure_png"), (".pdf", "figure_pdf"), (".csv", "csv")):
        copied = figures / f"tsne__figure4__shifted{suffix}"
        assert copied.read_bytes() == Path(sources["shifted"][key]).read_bytes()  # the metric's own file
        assert not str(Path(sources["shifted"][key]).resolve()).startswith(str(first.folder.resolve()))
    assert "](figures/tsne__figure4__shifted.png)" in report and "(figures/tsne__figure4__shifted.pdf)" in report
    assert "- figure4: t-SNE of speaker encoder bands embeddings, original and shifted speech: " in report
    assert "[tsne__figure4__shifted.csv](figures/tsne__figure4__shifted.csv)" in report

    # a second run from the same cache: the metric is not computed again, its maps still land in the new folder
    def refuse(*_):
        raise AssertionError("the cached result should serve the second run")

    monkeypatch.setattr(EmbeddingTsne, "compute", refuse)
    second = run(tmp_path, "second")
    for suffix in (".png", ".pdf", ".csv"):
        name = f"tsne__figure4__shifted{suffix}"
        assert (second.folder / "figures" / name).read_bytes() == (figures / name).read_bytes()
    assert (
        "[tsne__figure4__shifted.csv](figures/tsne__figure4__shifted.csv)" in (second.folder / "report.md").read_text()
    )

    # the metric's work folder gone from the cache: the map is said to be missing, the run still reports
    shutil.rmtree(Path(sources["shifted"]["figure_png"]).parent)
    third = run(tmp_path, "third")
    report = (third.folder / "report.md").read_text()
    assert not list(third.folder.glob("figures/tsne__*"))
    assert (
        "figure4: t-SNE of speaker encoder bands embeddings, original and shifted speech: not in this folder" in report
    )
    assert "run the experiment with a fresh VPEVAL_CACHE to draw it again." in report


class TestTsneFiguresReport(ReportContract):
    plugin_name = "embedding-tsne"
