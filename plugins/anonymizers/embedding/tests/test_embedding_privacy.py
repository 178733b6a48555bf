"""The embedding-privacy metric (seed 003 Table 6) on a dummy corpus with a small pitch-histogram fake encoder."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
import pytest

from vpeval.api import MetricInputs, PluginContext, SpeakerEncoder
from vpeval.errors import MetricInputError
from vpeval.plugins import get_plugin_manager
from vpeval.testing.dummies import make_corpus
from vpeval.types import Corpus
from vpeval_embedding_anonymizers.privacy_metric import EmbeddingPrivacy


class PitchEncoder(SpeakerEncoder):
    """Soft histogram of frame pitch over 24 log-spaced bins: the dummy corpus's voices differ in f0."""

    name: ClassVar[str] = "fake-pitch"
    sample_rate: ClassVar[int] = 16000
    dim: ClassVar[int] = 24
    calls = 0

    def embed(self, audio: np.ndarray) -> np.ndarray:
        type(self).calls += 1
        import pyworld

        signal = audio.astype(np.float64)
        f0, times = pyworld.dio(signal, self.sample_rate, f0_floor=70.0, f0_ceil=320.0)
        f0 = pyworld.stonemask(signal, f0, times, self.sample_rate)
        f0 = f0[f0 > 0] if np.any(f0 > 0) else np.array([70.0])
        centres = np.linspace(np.log(70), np.log(320), self.dim)
        width = centres[1] - centres[0]
        return np.exp(-0.5 * ((np.log(f0)[:, None] - centres) / width) ** 2).mean(axis=0) + 1e-3


def make_context(work_dir, seed=3) -> PluginContext:
    def factory(kind, name, params):
        if kind == "encoder":
            return PitchEncoder(PitchEncoder.Params(), context.child("encoder"))
        cls = get_plugin_manager().get(kind, name)
        return cls(cls.Params(**(params or {})), context.child(f"{kind}-{name}"))

    context = PluginContext(seed=seed, work_dir=work_dir, plugin_factory=factory)
    return context


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    root = tmp_path_factory.mktemp("embedding-privacy")
    evaluation = make_corpus(root / "eval", speakers=6, utterances=8, sample_rate=16000, seconds=0.5, seed=1)
    pool = make_corpus(root / "pool", speakers=10, utterances=8, sample_rate=16000, seconds=0.5, seed=2)
    encoder = PitchEncoder()
    pool_file = root / "pool.npz"
    np.savez(
        pool_file,
        embeddings=encoder.embed_corpus(pool),
        speakers=[u.speaker for u in pool.utterances],
        emotions=[u.emotion for u in pool.utterances],
    )
    return evaluation, str(pool_file)


def metric_params(pool_file: str) -> dict:
    return {
        "encoder": "fake-pitch",
        "repeats": 1,
        "systems": [
            {"use": "ohnn", "params": {"pool_vectors": pool_file, "epochs": 60}},
            {
                "use": "emotion-compensation",
                "params": {
                    "pool_vectors": pool_file,
                    "emotion_vectors": pool_file,
                    "base_params": {"epochs": 60},
                    "alpha_reference_norm": 35.0,
                },
            },
        ],
    }


def make_metric(work_dir, pool_file, **overrides) -> EmbeddingPrivacy:
    params = EmbeddingPrivacy.Params(**{**metric_params(pool_file), **overrides})
    return EmbeddingPrivacy(params, make_context(work_dir))


@pytest.fixture(scope="module")
def results(corpora, tmp_path_factory):
    evaluation, pool_file = corpora
    return make_metric(tmp_path_factory.mktemp("run"), pool_file).compute(MetricInputs(original=evaluation))


def value(results, metric, system, protocol=None):
    hits = [
        r.value
        for r in results
        if r.metric == metric
        and r.details["system"] == system
        and (protocol is None or r.details["protocol"] == protocol)
    ]
    assert len(hits) == 1, (metric, system, protocol)
    return hits[0]


def test_rows_for_every_system_and_protocol(results):
    assert all(np.isfinite(r.value) for r in results)
    value(results, "embedding-eer", "original", "O-O")
    value(results, "embedding-uar", "original")
    for system in ("+ OHNN", "+ OHNN + EC"):
        for protocol in ("O-A", "A-A"):
            value(results, "embedding-eer", system, protocol)
        value(results, "embedding-uar", system)
    assert len(results) == 2 + 2 * 3 + 1  # + the compensation indicator's UAR
    (indicator,) = [r for r in results if r.metric == "emotion-indicator-uar"]
    assert indicator.details["system"] == "+ OHNN + EC" and indicator.details["indicator"] == "classifier"
    assert "Emotion indicator of + OHNN + EC (classifier)" in results[0].details["table"]
    table = results[0].details["table"]
    assert "| + OHNN + EC |" in table and "EER O-A" in table


def test_ohnn_raises_eer_over_original(results):
    original = value(results, "embedding-eer", "original", "O-O")
    assert original < 25.0  # the fake encoder does separate the dummy speakers
    assert value(results, "embedding-eer", "+ OHNN", "O-A") > original + 15.0


def test_deterministic_and_embeddings_cached(corpora, results, tmp_path):
    evaluation, pool_file = corpora
    metric = make_metric(tmp_path, pool_file)
    first = metric.compute(MetricInputs(original=evaluation))
    calls = PitchEncoder.calls
    again = make_metric(tmp_path, pool_file).compute(MetricInputs(original=evaluation))
    assert PitchEncoder.calls == calls  # second run read the cached embeddings
    as_tuples = [
        [(r.metric, r.value, r.details["system"], r.details.get("protocol")) for r in rows]
        for rows in (results, first, again)
    ]
    assert as_tuples[0] == as_tuples[1] == as_tuples[2]


def test_only_the_first_anonymizer_call_reports(corpora, tmp_path):
    evaluation, pool_file = corpora
    metric = make_metric(
        tmp_path, pool_file, systems=[{"use": "ohnn", "params": {"pool_vectors": pool_file, "epochs": 20}}]
    )
    assert metric.compute(MetricInputs(original=evaluation, anonymized=evaluation))
    assert metric.compute(MetricInputs(original=evaluation, anonymized=evaluation)) == []


def test_corpus_without_emotions_is_a_clear_error(corpora, tmp_path):
    evaluation, pool_file = corpora
    plain = Corpus(name="plain", utterances=[replace(u, emotion=None) for u in evaluation.utterances])
    with pytest.raises(MetricInputError, match="emotion"):
        make_metric(tmp_path, pool_file).compute(MetricInputs(original=plain))
