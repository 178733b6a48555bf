"""The emotion2vec+ loader: FunASR's real AutoModel on a tiny random-weight folder in the released layout."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("funasr")

from vpeval.errors import MissingModelError  # noqa: E402
from vpeval_emotion2vec import folder as e2v  # noqa: E402
from vpeval_emotion2vec.tiny import TOKENS, tiny_folder  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tiny_folder(tmp_path_factory.mktemp("emotion2vec_plus_large"))


def test_the_folder_weights_are_the_ones_funasr_runs(folder):
    import torch

    model = e2v.load(str(folder), "cpu")
    saved = torch.load(folder / "model.pt", weights_only=True)
    loaded = model.model.state_dict()
    assert set(saved) <= set(loaded)
    assert all(torch.equal(saved[k].float(), loaded[k].float().cpu()) for k in saved)
    labels, scores = e2v.scores(model, np.random.default_rng(0).normal(0, 0.1, 16000).astype(np.float32))
    assert labels == [e2v.english(t) for t in TOKENS] and labels[-1] == "unknown"
    assert sum(scores) == pytest.approx(1.0, abs=1e-5)


def test_toolkit_map_takes_the_most_probable_class_first():
    labels = [e2v.english(t) for t in TOKENS]
    # disgusted alone is the most probable: ang, although sad-mapped classes (fearful + sad) hold more in sum.
    assert e2v.toolkit_label(labels, [0.0, 0.4, 0.3, 0.0, 0.0, 0.0, 0.3, 0.0, 0.0]) == "ang"
    assert e2v.toolkit_label(labels, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9, 0.1]) == "neu"  # surprised
    assert e2v.toolkit_label(labels, [0.0, 0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1]) == "sad"  # fearful
    # Seed 003's map differs on two classes: surprised -> hap, disgusted -> sad.
    assert e2v.toolkit_label(labels, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.9, 0.1], e2v.SEED003_MAP) == "hap"
    assert e2v.toolkit_label(labels, [0.0, 0.4, 0.3, 0.0, 0.0, 0.0, 0.3, 0.0, 0.0], e2v.SEED003_MAP) == "sad"


def test_a_checkpoint_with_code_is_refused_before_funasr(tmp_path, folder):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "model.pt").write_bytes(b"\x80\x04cposix\nsystem\n.")
    with pytest.raises(MissingModelError):
        e2v.load(str(copy), "cpu")
    assert "tokens.txt" in e2v.folder_problems(str(tmp_path), "models")[-1]
