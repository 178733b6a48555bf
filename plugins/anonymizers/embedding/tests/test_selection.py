"""Selection (VPC B1 rule): pseudo-speakers far from the source, keyed by voice, consistent per speaker."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from vpeval.api import Corpus, CorpusSource, PluginContext, SpeakerEncoder, Utterance
from vpeval.errors import DataError
from vpeval_embedding_anonymizers.selection import Selection, selection_counts
from vpeval_embedding_anonymizers.synthetic import synthetic_embeddings


def cos(a, b):
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def make(pool_file, context, **kw):
    return Selection(Selection.Params(pool_vectors=pool_file, **kw), context)


def test_keys_levels_and_distance(pool_file, context, evaluation_set, make_voices):
    x, speakers, _ = evaluation_set
    anon = make(pool_file, context, farthest=10, select=5)
    keys = [f"u{i}" for i in range(len(x))]
    z = anon.anonymize_embeddings(x, make_voices(context, keys))
    assert z.shape == x.shape and np.isfinite(z).all()
    assert np.array_equal(z, anon.anonymize_embeddings(x, make_voices(context, keys)))
    other = anon.anonymize_embeddings(x, make_voices(context, [k + "b" for k in keys]))
    assert not np.allclose(z, other)
    # Far from the source: on average less similar to it than the pool speakers are.
    pool_cos = np.mean([cos(np.repeat(m[None], len(x), 0), x).mean() for m in anon.pool.speaker_means])
    assert cos(z, x).mean() < pool_cos - 0.2
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), np.linalg.norm(x, axis=1))
    # Speaker level: one pseudo-speaker for all rows of a speaker.
    rows = np.flatnonzero(speakers == speakers[0])
    zs = anon.anonymize_embeddings(x[rows], make_voices(context, [speakers[0]] * len(rows), level="speaker"))
    assert np.allclose(zs, zs[0])


def test_counts_scale_like_b1():
    assert selection_counts(1160, 200, 100) == (200, 100)
    assert selection_counts(5000, 200, 100) == (200, 100)
    assert selection_counts(116, 200, 100) == (20, 10)
    # Small pools average at least 5 (B1's fractions alone gave 2 farthest / 1 averaged of 10: no averaging),
    # drawn from twice as many candidates where the pool has them; the whole pool when it is tiny.
    assert selection_counts(10, 200, 100) == (10, 5)
    assert selection_counts(60, 200, 100) == (10, 5)
    assert selection_counts(3, 200, 100) == (3, 3)
    assert selection_counts(10, 200, 2) == (4, 2)  # an explicit smaller select is kept
    assert selection_counts(10, 200, 100, min_averaged=1) == (2, 1)  # the old rule, on request


def test_default_pool_averages_at_least_five_per_gender():
    pool = Selection.Params().pool
    assert pool.use == "synth" and pool.params["speakers"] >= 100
    half = pool.params["speakers"] // 2
    p = Selection.Params()
    _, n_sel = selection_counts(half, p.farthest, p.select, p.min_averaged)
    assert n_sel >= 5


def test_averages_the_number_of_speakers_it_says(pool_file, context, evaluation_set, make_voices):
    x, _, _ = evaluation_set
    anon = make(pool_file, context)  # B1 defaults on a 40-speaker pool (20 per gender)
    voices = make_voices(context, [f"k{i}" for i in range(6)], genders=["f", "m"] * 3)
    z = anon.anonymize_embeddings(x[:6], voices)
    again = make_voices(context, [f"k{i}" for i in range(6)], genders=["f", "m"] * 3)
    for row, voice in enumerate(again):
        allowed, n_far, n_sel = anon.counts(voice)
        assert (allowed, n_far, n_sel) == (20, 10, 5)
        chosen = anon.chosen_speakers(x[row], voice)
        assert len(set(chosen.tolist())) == n_sel
        mean = anon.pool.speaker_means[chosen].mean(axis=0)
        expected = mean / np.linalg.norm(mean) * np.linalg.norm(x[row])
        np.testing.assert_allclose(z[row], expected, rtol=1e-10)
        # ... and z is no single pool speaker: cosine to the nearest pool speaker stays below 1.
        assert max(cos(anon.pool.speaker_means, np.repeat(z[row][None], len(anon.pool.speaker_ids), 0))) < 0.99


def test_same_gender_pool(pool_file, context, evaluation_set, make_voices):
    x, _, _ = evaluation_set
    anon = make(pool_file, context, farthest=4, select=2)
    voices = make_voices(context, ["a", "b"], genders=["f", "m"])
    anon.prepare()
    for v in voices:
        allowed = anon.candidates(v)
        assert {anon.pool.speaker_genders[i] for i in allowed} == {v.utterance.gender}


def test_bad_params_and_inputs(pool_file, context, tmp_path, make_voices):
    with pytest.raises(ValidationError, match="must not exceed farthest"):  # the config layer adds file and line
        Selection.Params(farthest=5, select=10)
    anon = make(pool_file, context)
    with pytest.raises(DataError):
        anon.anonymize_embeddings(np.zeros((2, 5)), make_voices(context, ["a", "b"]))
    with pytest.raises(DataError, match="does not exist"):
        make(str(tmp_path / "missing.npz"), context).prepare()


class FakeEncoder(SpeakerEncoder):
    """Reads the vector stored next to each fake wav path (no audio model needed)."""

    name = "fake"
    dim = 32
    calls = 0

    def embed_corpus(self, corpus):
        FakeEncoder.calls += 1
        return np.stack([self.table[u.path] for u in corpus.utterances])


def test_pool_from_corpus_and_encoder_is_cached(tmp_path, make_voices):
    x, speakers, emotions = synthetic_embeddings(12, 3, seed=5)
    utts = [
        Utterance(id=f"{s}-{i}", speaker=s, path=f"fake/{i}.wav", emotion=e)
        for i, (s, e) in enumerate(zip(speakers, emotions))
    ]
    corpus = Corpus(name="pool", utterances=utts, fingerprint="pool-5")

    class FakeCorpus(CorpusSource):
        name = "fake-corpus"

        def load(self):
            return corpus

    FakeEncoder.table = {u.path: x[i] for i, u in enumerate(utts)}

    def factory(kind, name, params):
        return {"corpus": FakeCorpus, "encoder": FakeEncoder}[kind](None, PluginContext())

    context = PluginContext(seed=1, work_dir=tmp_path, plugin_factory=factory)
    params = Selection.Params(pool={"use": "fake-corpus", "params": {}}, encoder={"use": "fake"}, farthest=4, select=2)
    for _ in range(2):
        anon = Selection(params, context)
        z = anon.anonymize_embeddings(x[:3], make_voices(context, ["a", "b", "c"]))
        assert z.shape == (3, 32)
    assert FakeEncoder.calls == 1  # the second instance read the cached pool
    assert len(anon.pool.speaker_ids) == 12
