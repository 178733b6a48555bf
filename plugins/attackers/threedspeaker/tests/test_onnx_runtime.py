"""The ONNX path without the `onnx` package: a hand-written graph (mean of the fbank frames times W) through the
encoders, so the session, the layout read from the input's name, batching and the errors are tested everywhere."""

from __future__ import annotations

import numpy as np
import pytest
from onnx_bytes import mean_projection_model
from threedspeaker_testing import make_encoder, published_fbank, voice

from vpeval.errors import MissingModelError

WEIGHT = np.random.default_rng(0).normal(size=(16, 5)).astype(np.float32)


def folder_with(tmp_path, input_name: str, weight=WEIGHT, name: str = "avg_model.onnx"):
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(mean_projection_model(weight, input_name, "embs"))
    return folder


@pytest.mark.parametrize(("input_name", "layout"), [("feature", "3dspeaker"), ("feats", "wespeaker")])
@pytest.mark.parametrize("architecture", ["campplus", "eres2net"])
def test_the_graph_runs_on_the_layouts_front_end(tmp_path, input_name, layout, architecture):
    folder = folder_with(tmp_path, input_name)
    encoder = make_encoder(architecture, {"source": str(folder), "feat_dim": 16, "batch_size": 3}, tmp_path)
    audios = [voice(s, speaker=k) for k, s in enumerate([1.3, 0.4, 2.1, 0.9])]
    got = encoder.embed_batch(audios)
    want = np.stack([published_fbank(a, layout).numpy().mean(axis=0) @ WEIGHT for a in audios])
    assert encoder.layout == layout and encoder.dim == 5
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(encoder.embed(audios[2]), got[2])


def test_another_input_name_takes_the_layout_param(tmp_path, one_sentence):
    folder = folder_with(tmp_path, "input")
    with pytest.raises(MissingModelError) as caught:
        make_encoder("campplus", {"source": str(folder), "feat_dim": 16}, tmp_path).embed(voice(0.5))
    assert "'input'" in one_sentence(str(caught.value)) and "layout: wespeaker" in str(caught.value)
    encoder = make_encoder("campplus", {"source": str(folder), "feat_dim": 16, "layout": "wespeaker"}, tmp_path)
    want = published_fbank(voice(0.5), "wespeaker").numpy().mean(axis=0) @ WEIGHT
    np.testing.assert_allclose(encoder.embed(voice(0.5)), want, rtol=1e-4, atol=1e-5)


def test_a_graph_of_other_fbank_bins_names_feat_dim(tmp_path, one_sentence):
    folder = folder_with(tmp_path, "feats")
    with pytest.raises(MissingModelError) as caught:
        make_encoder("eres2net", {"source": str(folder)}, tmp_path).embed(voice(0.5))
    assert "takes 16 fbank bins" in one_sentence(str(caught.value)) and "feat_dim: 16" in str(caught.value)


def test_a_damaged_onnx_file_is_one_sentence(tmp_path, one_sentence):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "campplus.onnx").write_bytes(b"\x08\x07 not a model")
    with pytest.raises(MissingModelError) as caught:
        make_encoder("campplus", {"source": str(folder)}, tmp_path).embed(voice(0.5))
    message = one_sentence(str(caught.value))
    assert str(folder / "campplus.onnx") in message and "not a readable ONNX model" in message


def test_format_onnx_skips_a_checkpoint_beside_it(tmp_path):
    from threedspeaker_testing import write_checkpoint

    folder = write_checkpoint(folder_with(tmp_path, "feature", name="campplus.onnx"), "campplus", "3dspeaker")
    assert make_encoder("campplus", {"source": str(folder), "feat_dim": 16, "format": "onnx"}, tmp_path).embed(
        voice(0.5)
    ).shape == (5,)
