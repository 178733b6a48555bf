"""embedding-tsne on small synthetic emotional speech: seeded t-SNE, the CSV is what the figure draws, the
silhouettes are scikit-learn's, and a missing emotion2vec+ folder is refused in one sentence."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import silhouette_score

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval_embedding_tsne.metric import EmbeddingTsne

SMALL = {"embedding": "encoder", "encoder": {"use": "bands"}, "perplexity": 5.0, "max_iter": 250}


def run(corpora, work: Path, make_context, seed: int = 3, **params):
    metric = EmbeddingTsne(params=EmbeddingTsne.Params(**(SMALL | params)), context=make_context(work, seed))
    original, anonymized = corpora
    attributes = {"anonymizer": "shifted"}
    return metric.compute(MetricInputs(original=original, anonymized=anonymized, attributes=attributes))


def read_csv(path: str) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_rows_files_and_seeded_determinism(tmp_path, corpora, make_context):
    first = run(corpora, tmp_path / "a", make_context, init="random")
    again = run(corpora, tmp_path / "b", make_context, init="random")
    other = run(corpora, tmp_path / "c", make_context, seed=4, init="random")
    assert [r.details["speech"] for r in first] == ["original", "anonymized"]
    assert {r.metric for r in first} == {"embedding-tsne-encoder"}
    for r in first:
        assert r.details["points"] == 32 and r.details["speakers"] == 4
        assert Path(r.details["figure_png"]).stat().st_size > 0 and Path(r.details["figure_pdf"]).stat().st_size > 0
    assert Path(first[0].details["csv"]).read_bytes() == Path(again[0].details["csv"]).read_bytes()
    assert [r.value for r in first] == [r.value for r in again]
    points = [(row["x"], row["y"]) for row in read_csv(first[0].details["csv"])]
    assert points != [(row["x"], row["y"]) for row in read_csv(other[0].details["csv"])]  # the seed moves it


def test_the_csv_holds_the_points_the_figure_draws(tmp_path, corpora, make_context, monkeypatch):
    import vpeval.report.figures as figures

    drawn = {}
    save = figures.save

    def capture(fig, folder, name):
        for ax in fig.axes:
            if ax.get_title():
                offsets = [c.get_offsets() for c in ax.collections]
                drawn[ax.get_title().split(") ", 1)[1]] = np.concatenate(offsets)
        return save(fig, folder, name)

    monkeypatch.setattr(figures, "save", capture)
    results = run(corpora, tmp_path, make_context)
    rows = read_csv(results[0].details["csv"])
    assert {row["speech"] for row in rows} == set(drawn) == {"original", "shifted"}
    for speech, offsets in drawn.items():
        points = np.array([[float(r["x"]), float(r["y"])] for r in rows if r["speech"] == speech])
        assert len(points) == len(offsets) == 32
        as_set = lambda a: sorted(map(tuple, np.round(a, 9)))  # noqa: E731 (drawn grouped by emotion and speaker)
        assert as_set(points) == as_set(offsets)


def test_silhouettes_are_sklearns(tmp_path, corpora, make_context, band_encoder):
    results = run(corpora, tmp_path, make_context)
    rows = read_csv(results[0].details["csv"])
    encoder = band_encoder()
    for result, corpus in zip(results, corpora):
        speech = "original" if result.details["speech"] == "original" else "shifted"
        mine = [r for r in rows if r["speech"] == speech]
        points = np.array([[float(r["x"]), float(r["y"])] for r in mine])
        emotions, speakers = [r["emotion"] for r in mine], [r["speaker"] for r in mine]
        assert result.value == pytest.approx(silhouette_score(points, emotions))
        assert result.details["silhouette_speaker_2d"] == pytest.approx(silhouette_score(points, speakers))
        vectors = np.stack([encoder.embed(corpus[r["utterance"]].load(16000)) for r in mine])
        assert result.details["silhouette_emotion_embedding"] == pytest.approx(silhouette_score(vectors, emotions))
        assert result.details["silhouette_speaker_embedding"] == pytest.approx(silhouette_score(vectors, speakers))
    # the band energies separate the synthetic emotions in the original speech (level and brightness differ)
    assert results[0].details["silhouette_emotion_embedding"] > 0


def test_a_missing_emotion2vec_folder_is_one_sentence(tmp_path, corpora, make_context):
    params = EmbeddingTsne.Params(emotion2vec_folder=str(tmp_path / "nowhere"))
    (problem,) = EmbeddingTsne.missing_paths(params)
    assert "nowhere is not a folder" in problem and problem.count(". ") == 0 and problem.endswith(".")
    with pytest.raises(MetricInputError, match="nowhere is not a folder"):
        run(corpora, tmp_path, make_context, embedding="emotion2vec", emotion2vec_folder=str(tmp_path / "nowhere"))
    (unset,) = EmbeddingTsne.missing_paths(EmbeddingTsne.Params())
    assert "emotion2vec_folder is not set" in unset


def test_a_perplexity_above_the_utterances_is_refused(tmp_path, corpora, make_context):
    with pytest.raises(MetricInputError, match="perplexity 40 must be below the number of drawn utterances"):
        run(corpora, tmp_path, make_context, perplexity=40.0)


def test_emotion2vec_embeddings_are_funasrs_feats(tmp_path, corpora, make_context):
    pytest.importorskip("funasr")
    from funasr import AutoModel

    from vpeval_emotion2vec.tiny import tiny_folder

    folder = tiny_folder(tmp_path / "emotion2vec_plus_large")
    metric = EmbeddingTsne(
        params=EmbeddingTsne.Params(emotion2vec_folder=str(folder), perplexity=5.0, max_iter=250),
        context=make_context(tmp_path / "work"),
    )
    original = corpora[0]
    vectors = metric.embeddings(list(original)[:3], "original")
    model = AutoModel(model=str(folder), disable_update=True, disable_pbar=True)
    for u, vector in zip(original, vectors):
        (out,) = model.generate(u.path, granularity="utterance", extract_embedding=True)
        np.testing.assert_allclose(vector, out["feats"], rtol=1e-5, atol=1e-6)
    assert vectors.shape == (3, 16)  # the tiny folder's 16-wide block
