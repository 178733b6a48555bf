"""OHNN: orthogonal by construction, rotated vectors far from the originals yet distinct per speaker."""

from __future__ import annotations

import numpy as np
import pytest

from vpeval.errors import DataError
from vpeval_embedding_anonymizers.evaluation import pairwise_eer
from vpeval_embedding_anonymizers.ohnn import OHNNAnonymizer, derangement

FAST = {"epochs": 150}
# The learned rotation alone (one fixed map, the paper's construction and the default): the tests of what
# training gives use it.
FIXED = dict(FAST)
# vpeval's option: a pool-speaker reassignment drawn per voice after the rotation.
PER_VOICE = {**FAST, "voice_target": "random-pool-speaker"}


def cos(a, b):
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def trained(pool_file, work_dir):
    from vpeval.api import PluginContext

    anon = OHNNAnonymizer(OHNNAnonymizer.Params(pool_vectors=pool_file, **FIXED), PluginContext(7, work_dir / "ohnn"))
    anon.prepare()
    return anon


@pytest.fixture(scope="module")
def per_voice(pool_file, work_dir, trained):
    """The option: the same trained OHNN (same checkpoint) plus a pool-speaker target drawn per voice."""
    from vpeval.api import PluginContext

    anon = OHNNAnonymizer(
        OHNNAnonymizer.Params(pool_vectors=pool_file, **PER_VOICE), PluginContext(7, work_dir / "ohnn")
    )
    anon.prepare()
    return anon


def test_params_defaults_are_the_papers():
    """Seed 003, section 4.1: one OHNN initialised with seed 50, AAM softmax plus cosine similarity, one
    learned rotation for every utterance (no per-voice reassignment)."""
    p = OHNNAnonymizer.Params()
    assert p.voice_target == "none"
    assert p.rotations == 1
    assert p.init_seed == 50
    assert p.aam_weight > 0 and p.cos_weight > 0  # both terms of the additive loss
    assert p.reflections is None  # K = D: every rotation reachable


def test_init_seed_fixes_the_initialisation_whatever_the_experiment_seed(pool_file, tmp_path):
    from vpeval.api import PluginContext

    def matrix(seed, **extra):
        params = OHNNAnonymizer.Params(pool_vectors=pool_file, epochs=1, lr=1e-9, **extra)
        return OHNNAnonymizer(params, PluginContext(seed, tmp_path / f"s{seed}-{extra}")).rotation_matrix()

    np.testing.assert_allclose(matrix(1), matrix(2), atol=1e-6)  # seed 50 both times
    assert not np.allclose(matrix(1, init_seed=None), matrix(2, init_seed=None), atol=1e-3)


def test_orthogonal(trained):
    m = trained.rotation_matrix()
    np.testing.assert_allclose(m @ m.T, np.eye(m.shape[0]), atol=1e-5)
    assert not np.allclose(m, np.eye(m.shape[0]), atol=0.1)


def test_far_from_originals_but_speakers_distinct(trained, evaluation_set, context, make_voices):
    x, speakers, _ = evaluation_set
    z = trained.anonymize_embeddings(x, make_voices(context, [f"u{i}" for i in range(len(x))]))
    assert z.shape == x.shape and np.isfinite(z).all()
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), np.linalg.norm(x, axis=1))
    same_speaker = speakers[:, None] == speakers[None, :]
    orig_same = (x / np.linalg.norm(x, axis=1, keepdims=True)) @ (x / np.linalg.norm(x, axis=1, keepdims=True)).T
    assert cos(z, x).mean() < 0.3 < orig_same[same_speaker].mean()
    assert pairwise_eer(x, z, speakers) > 0.3  # original vs anonymized: the source is hidden
    # One fixed map keeps same-speaker vectors as alike as before: A-A EER equals O-O (why the default
    # draws a target per voice, below).
    assert pairwise_eer(z, z, speakers) == pytest.approx(pairwise_eer(x, x, speakers), abs=1e-9)


def test_pseudo_speaker_differs_per_utterance_and_is_one_per_speaker(
    per_voice, trained, evaluation_set, context, make_voices
):
    x, speakers, _ = evaluation_set
    # Utterance level: the same vector under 12 utterance keys gets (almost always) 12 pseudo-speakers.
    same = np.repeat(x[:1], 12, axis=0)
    z = per_voice.anonymize_embeddings(same, make_voices(context, [f"utt{i}" for i in range(12)]))
    assert len({tuple(np.round(r, 6)) for r in z}) >= 10
    assert np.array_equal(z, per_voice.anonymize_embeddings(same, make_voices(context, [f"utt{i}" for i in range(12)])))
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), np.linalg.norm(same, axis=1))
    # They land on many different pool speakers' regions.
    centres = per_voice.pool.speaker_means / np.linalg.norm(per_voice.pool.speaker_means, axis=1, keepdims=True)
    nearest = np.argmax((z / np.linalg.norm(z, axis=1, keepdims=True)) @ centres.T, axis=1)
    assert len(set(nearest.tolist())) >= 6
    # Speaker level: one orthogonal map per speaker key, so its rows keep their mutual angles.
    rows = np.flatnonzero(speakers == speakers[0])
    zs = per_voice.anonymize_embeddings(x[rows], make_voices(context, [speakers[0]] * len(rows), level="speaker"))
    np.testing.assert_allclose(zs @ zs.T, x[rows] @ x[rows].T, atol=1e-8)
    other = per_voice.anonymize_embeddings(
        x[rows], make_voices(context, [speakers[0] + "b"] * len(rows), level="speaker")
    )
    assert not np.allclose(zs, other)


def test_per_voice_targets_lift_aa_eer_above_oo(per_voice, trained, evaluation_set, context, make_voices):
    x, speakers, _ = evaluation_set
    keys = [f"u{i}" for i in range(len(x))]
    z = per_voice.anonymize_embeddings(x, make_voices(context, keys))
    eer_oo, eer_aa = pairwise_eer(x, x, speakers), pairwise_eer(z, z, speakers)
    assert eer_aa > eer_oo + 0.2, (eer_oo, eer_aa)
    assert pairwise_eer(x, z, speakers) > 0.3
    # The same checkpoint serves both (voice_target does not enter training).
    np.testing.assert_array_equal(per_voice.rotation_matrix(), trained.rotation_matrix())


def test_voice_rotation_is_orthogonal_and_sends_pool_speakers_to_others(per_voice, context, make_voices):
    span = per_voice.speaker_span()
    (voice,) = make_voices(context, ["utt-x"])
    r = per_voice.voice_rotation(voice)
    np.testing.assert_allclose(r @ r.T, np.eye(len(r)), atol=1e-10)
    centres = per_voice.pool.speaker_means / np.linalg.norm(per_voice.pool.speaker_means, axis=1, keepdims=True)
    moved = (centres @ span) @ r @ span.T
    nearest = np.argmax(moved @ centres.T, axis=1)
    assert np.mean(nearest != np.arange(len(centres))) > 0.9  # pool speakers become other pool speakers


def test_pool_speakers_map_to_their_targets(trained):
    # The AAM targets: each pool speaker's rotated vectors sit nearest to another pool speaker.
    pool = trained.pool
    z = trained.anonymize_embeddings(pool.speaker_means, _voices(len(pool.speaker_ids)))
    unit = pool.speaker_means / np.linalg.norm(pool.speaker_means, axis=1, keepdims=True)
    nearest = np.argmax((z / np.linalg.norm(z, axis=1, keepdims=True)) @ unit.T, axis=1)
    assert np.mean(nearest != np.arange(len(nearest))) > 0.9


def _voices(n):
    from vpeval.api import PluginContext, Voice

    return [Voice(f"k{i}", "utterance", PluginContext().rng(i)) for i in range(n)]


def test_checkpoint_reloads_same_rotation(trained, pool_file, work_dir):
    from vpeval.api import PluginContext

    files = list((work_dir / "ohnn" / "ohnn").glob("*.pt"))
    assert len(files) == 1
    again = OHNNAnonymizer(OHNNAnonymizer.Params(pool_vectors=pool_file, **FIXED), PluginContext(7, work_dir / "ohnn"))
    np.testing.assert_array_equal(again.rotation_matrix(), trained.rotation_matrix())


def test_rotation_bank_follows_voice_keys(pool_file, tmp_path, make_voices):
    from vpeval.api import PluginContext

    context = PluginContext(3, tmp_path)
    anon = OHNNAnonymizer(OHNNAnonymizer.Params(pool_vectors=pool_file, rotations=3, epochs=30, reflections=8), context)
    x = np.repeat(np.random.default_rng(0).normal(size=(1, 32)), 12, axis=0)
    z = anon.anonymize_embeddings(x, make_voices(context, [f"utt{i}" for i in range(12)]))
    assert len({tuple(np.round(r, 6)) for r in z}) > 1  # utterance level: different rotations
    zs = anon.anonymize_embeddings(x, make_voices(context, ["spk1"] * 12, level="speaker"))
    assert np.allclose(zs, zs[0])  # speaker level: one rotation for the speaker
    np.testing.assert_array_equal(z, anon.anonymize_embeddings(x, make_voices(context, [f"utt{i}" for i in range(12)])))


def test_derangement_has_no_fixed_point():
    rng = np.random.default_rng(0)
    for n in (2, 3, 10):
        d = derangement(n, rng)
        assert sorted(d) == list(range(n)) and np.all(d != np.arange(n))


def test_one_speaker_pool_is_an_error(tmp_path, context):
    path = tmp_path / "one.npz"
    np.savez(path, embeddings=np.ones((3, 4)), speakers=np.array(["a", "a", "a"]))
    with pytest.raises(DataError):
        OHNNAnonymizer(OHNNAnonymizer.Params(pool_vectors=str(path)), context).prepare()
