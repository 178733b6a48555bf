"""Emotion compensation: z + alpha n along the predicted emotion's SVM normal; raises embedding UAR."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.errors import DataError
from vpeval_embedding_anonymizers.compensation import EmotionCompensation
from vpeval_embedding_anonymizers.evaluation import embedding_space_table, format_table

BASE = {"epochs": 150}


def make(pool_file, work_dir, **kw):
    # Absolute units unless a test says otherwise: the checks below are about Eq. 1 with alpha = 35.
    kw.setdefault("alpha_units", "absolute")
    params = EmotionCompensation.Params(pool_vectors=pool_file, emotion_vectors=pool_file, base_params=BASE, **kw)
    return EmotionCompensation(params, PluginContext(7, work_dir / "ec"))


def test_moves_along_predicted_normal(pool_file, work_dir, evaluation_set, make_voices):
    x, _, _ = evaluation_set
    anon = make(pool_file, work_dir)
    keys = [f"u{i}" for i in range(len(x))]
    z_edit = anon.anonymize_embeddings(x, make_voices(anon.context, keys))
    z = anon.base.anonymize_embeddings(x, make_voices(anon.context, keys))
    predicted = anon.indicator_model.predict(x)
    for emotion, alpha in {"happy": 35, "angry": 35, "sad": -35, "neutral": 0}.items():
        rows = predicted == emotion
        n = anon.normals[anon.emotions.index(emotion)]
        np.testing.assert_allclose(z_edit[rows] - z[rows], alpha * np.repeat(n[None], rows.sum(), 0), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(anon.normals, axis=1), 1.0)
    # The SVM normals point towards their emotion: positives project higher than negatives.
    pool = np.load(pool_file)
    for i, emotion in enumerate(anon.emotions):
        proj = pool["embeddings"] @ anon.normals[i]
        assert proj[pool["emotions"] == emotion].mean() > proj[pool["emotions"] != emotion].mean()
    assert np.array_equal(z_edit, anon.anonymize_embeddings(x, make_voices(anon.context, keys)))


def test_compensation_raises_uar_over_ohnn_table6(pool_file, work_dir, evaluation_set, make_voices):
    x, speakers, emotions = evaluation_set
    keys = [f"u{i}" for i in range(len(x))]
    anon = make(pool_file, work_dir, indicator="label")
    compensated = anon.anonymize_embeddings(x, make_voices(anon.context, keys, emotions=emotions))
    rotated = anon.base.anonymize_embeddings(x, make_voices(anon.context, keys))
    rows = embedding_space_table(x, speakers, emotions, {"+ OHNN": rotated, "+ OHNN + EC": compensated})
    table = format_table(rows)
    assert [r.system for r in rows] == ["original", "+ OHNN", "+ OHNN + EC"] and "UAR final" in table
    original, ohnn, ec = rows
    assert ec.uar_final > ohnn.uar_final + 0.1, table
    assert ec.uar_first > ohnn.uar_first + 0.1, table
    assert ohnn.eer_oa > original.eer_oa + 0.3, table


def test_label_indicator_needs_labels_and_alpha_keys_need_data(pool_file, work_dir, make_voices, tmp_path):
    anon = make(pool_file, work_dir, indicator="label")
    with pytest.raises(DataError, match="indicator"):
        anon.anonymize_embeddings(np.zeros((1, 32)), make_voices(anon.context, ["a"]))
    with pytest.raises(DataError, match="bored"):
        make(pool_file, work_dir, alpha={"happy": 35, "bored": 10}).prepare()


def test_alpha_reference_norm_rescales(pool_file, work_dir):
    anon = make(pool_file, work_dir, alpha_units="relative", alpha_reference_norm=100.0)
    anon.prepare()
    norm = np.median(np.linalg.norm(np.load(pool_file)["embeddings"], axis=1))
    np.testing.assert_allclose(anon.alphas[anon.emotions.index("happy")], 35 * norm / 100.0)


def test_default_alpha_is_relative_so_unit_norm_encoders_keep_the_speaker(
    pool_file, work_dir, evaluation_set, make_voices, tmp_path
):
    """A unit-length encoder (GE2E-like): the paper's absolute 35 would replace the vector by 35 n_e."""
    from vpeval_embedding_anonymizers.compensation import REFERENCE_NORM

    pool = np.load(pool_file)
    unit_pool = tmp_path / "unit.npz"
    np.savez(
        unit_pool,
        **{
            **{k: pool[k] for k in pool.files},
            "embeddings": pool["embeddings"] / np.linalg.norm(pool["embeddings"], axis=1, keepdims=True),
        },
    )
    x, _, _ = evaluation_set
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    params = EmotionCompensation.Params(pool_vectors=str(unit_pool), emotion_vectors=str(unit_pool), base_params=BASE)
    assert params.alpha_units == "relative" and params.alpha_reference_norm == REFERENCE_NORM
    anon = EmotionCompensation(params, PluginContext(7, work_dir / "ec-unit"))
    keys = [f"u{i}" for i in range(len(x))]
    z_edit = anon.anonymize_embeddings(x, make_voices(anon.context, keys))
    z = anon.base.anonymize_embeddings(x, make_voices(anon.context, keys))
    np.testing.assert_allclose(np.abs(anon.alphas).max(), 35 / REFERENCE_NORM, rtol=1e-9)
    moved = np.linalg.norm(z_edit - z, axis=1)
    assert moved.max() == pytest.approx(35 / REFERENCE_NORM, rel=1e-9)
    # The step stays comparable to the vector instead of 35 times it: z_edit keeps the pseudo-speaker.
    compensated = moved > 0
    cos = np.sum(z_edit * z, axis=1) / np.linalg.norm(z_edit, axis=1) / np.linalg.norm(z, axis=1)
    assert cos[compensated].mean() > 0.4
    absolute = EmotionCompensation(
        EmotionCompensation.Params(
            pool_vectors=str(unit_pool), emotion_vectors=str(unit_pool), base_params=BASE, alpha_units="absolute"
        ),
        PluginContext(7, work_dir / "ec-unit"),
    )
    z_abs = absolute.anonymize_embeddings(x, make_voices(absolute.context, keys))
    cos_abs = np.sum(z_abs * z, axis=1) / np.linalg.norm(z_abs, axis=1) / np.linalg.norm(z, axis=1)
    assert cos_abs[compensated].mean() < 0.1  # the explicit absolute mode: speaker erased, as documented
