"""Frame matching shared by poolvc and vector-vc: the kNN search is the plain formula bit for bit, and
the averages follow the indices."""

import numpy as np

from vpeval_world.matching import envelope_cepstra, knn_average, knn_indices, mean_normalised


def test_knn_distances_are_the_straightforward_formula_bit_for_bit():
    rng = np.random.default_rng(5)
    query, keys = rng.normal(size=(300, 19)), rng.normal(size=(700, 19))
    key_sq = np.einsum("nc,nc->n", keys, keys)
    expected = np.argpartition(key_sq[None, :] - 2.0 * query @ keys.T, 3, axis=1)[:, :4]
    assert np.array_equal(knn_indices(query, keys, 4), expected)
    assert np.array_equal(knn_indices(query, keys, 4, chunk=64), expected)


def test_knn_average_is_the_mean_of_the_nearest_values_in_their_dtype():
    rng = np.random.default_rng(1)
    query, keys = rng.normal(size=(50, 5)), rng.normal(size=(80, 5))
    values = rng.normal(size=(80, 3)).astype(np.float32)
    idx = knn_indices(query, keys, 4)
    out = knn_average(query, keys, values, 4)
    assert out.dtype == np.float32 and np.array_equal(out, values[idx].mean(axis=1))


def test_cepstra_drop_c0_and_normalising_removes_the_mean():
    sp = np.abs(np.random.default_rng(2).normal(size=(30, 513))) + 1e-3
    ceps = envelope_cepstra(sp, 16000, n_mels=40, n_ceps=20)
    assert ceps.shape == (30, 19)
    assert np.allclose(mean_normalised(ceps).mean(axis=0), 0.0)
