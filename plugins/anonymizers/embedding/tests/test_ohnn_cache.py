"""OHNN's cached rotation: a cache file that is not plain tensors is never unpickled; it is trained again."""

from __future__ import annotations

import numpy as np

from vpeval.api import PluginContext
from vpeval_embedding_anonymizers.ohnn import OHNNAnonymizer


def _prepared(pool_file, folder):
    anon = OHNNAnonymizer(OHNNAnonymizer.Params(pool_vectors=pool_file, epochs=20), PluginContext(3, folder))
    anon.prepare()
    return anon


def test_foreign_cache_file_is_retrained_not_loaded(pool_file, tmp_path):
    first = _prepared(pool_file, tmp_path)
    (cached,) = (tmp_path / "ohnn").glob("ohnn-0-*.pt")
    cached.write_bytes(b"\x80\x04cposix\nsystem\n.")  # a pickle that names os.system
    again = _prepared(pool_file, tmp_path)
    np.testing.assert_allclose(again.rotation_matrix(), first.rotation_matrix(), atol=1e-6)
    assert cached.read_bytes()[:2] == b"PK"  # rewritten as a torch (zip) checkpoint
