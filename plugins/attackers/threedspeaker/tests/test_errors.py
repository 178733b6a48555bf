"""A wrong source is one sentence naming the file and what is expected: at `vpeval validate` and at loading."""

from __future__ import annotations

import pickle
from fractions import Fraction

import pytest
import torch
from threedspeaker_testing import make_encoder, published_network, tiny_params, voice, write_checkpoint

from vpeval.errors import DataError, MissingModelError
from vpeval.plugins import get_plugin_manager


def missing_paths(architecture: str, params: dict) -> list[str]:
    from vpeval.build import validate_params

    cls = get_plugin_manager().get("encoder", architecture)
    return cls.missing_paths(validate_params(cls, params))


def load_error(architecture: str, params: dict, tmp_path) -> str:
    with pytest.raises(MissingModelError) as caught:
        make_encoder(architecture, params, tmp_path).embed(voice(0.5))
    return str(caught.value)


@pytest.mark.parametrize("architecture", ["campplus", "eres2net"])
def test_a_missing_folder_is_one_sentence_at_validate(tmp_path, architecture, one_sentence):
    (sentence,) = missing_paths(architecture, {"source": str(tmp_path / "nowhere")})
    one_sentence(sentence)
    assert f"the {architecture} encoder's source" in sentence and str(tmp_path / "nowhere") in sentence
    assert "does not exist" in sentence


@pytest.mark.parametrize("where", ["source", "in the folder"])
def test_a_fifo_as_the_model_file_is_named_not_missing(tmp_path, where, one_sentence):
    """Before, a named pipe as embedding_model.ckpt (or as source) read as missing (issue 38)."""
    import os

    fifo = tmp_path / "embedding_model.ckpt"
    os.mkfifo(fifo)
    (sentence,) = missing_paths("campplus", {"source": str(fifo if where == "source" else tmp_path)})
    assert f"{fifo} cannot be used: it is a named pipe (FIFO" in one_sentence(sentence)
    assert "does not exist" not in sentence and "holds no model file" not in sentence


def test_a_folder_without_a_model_file_is_one_sentence(tmp_path, one_sentence):
    (tmp_path / "configuration.json").write_text("{}")
    (sentence,) = missing_paths("campplus", {"source": str(tmp_path)})
    assert "holds no model file" in one_sentence(sentence) and "*.onnx" in sentence
    (sentence,) = missing_paths("campplus", {"source": str(tmp_path), "format": "torch"})
    assert "*.onnx" not in sentence
    assert (
        one_sentence(load_error("campplus", {"source": str(tmp_path)}, tmp_path))
        == missing_paths("campplus", {"source": str(tmp_path)})[0]
    )


def test_a_folder_with_several_checkpoints_asks_for_one(tmp_path, one_sentence):
    for name in ("a.bin", "b.pt"):
        (tmp_path / name).write_bytes(b"")
    (sentence,) = missing_paths("campplus", {"source": str(tmp_path)})
    assert "a.bin, b.pt" in one_sentence(sentence)
    (tmp_path / "embedding_model.ckpt").write_bytes(b"")  # a 3D-Speaker recipe's folder: that one is the network
    assert missing_paths("campplus", {"source": str(tmp_path)}) == []


def test_a_published_folder_passes_validate(tmp_path):
    folder = write_checkpoint(tmp_path / "m", "eres2net", "3dspeaker")
    assert missing_paths("eres2net", tiny_params("eres2net", folder)) == []


def test_another_networks_checkpoint_names_the_file_and_the_first_difference(tmp_path, one_sentence):
    folder = write_checkpoint(tmp_path / "m", "eres2net", "3dspeaker")
    sentence = one_sentence(load_error("campplus", tiny_params("campplus", folder), tmp_path))
    assert str(folder / "pretrained_eres2net.ckpt") in sentence and "campplus" in sentence
    assert "none of its" in sentence and "head.conv1.weight" in sentence and "architecture params" in sentence


def test_wrong_architecture_params_name_the_tensor_and_both_shapes(tmp_path, one_sentence):
    folder = write_checkpoint(tmp_path / "m", "campplus", "3dspeaker")
    sentence = one_sentence(load_error("campplus", tiny_params("campplus", folder, init_channels=32), tmp_path))
    assert "xvector.tdnn.linear.weight is [16, 64, 5] there and [32, 64, 5] in these params" in sentence


def test_a_pickled_object_is_refused(tmp_path, one_sentence):
    path = tmp_path / "campplus_voxceleb.bin"
    torch.save({"model": Fraction(1, 3)}, path, pickle_module=pickle)  # an object weights_only never unpickles
    sentence = one_sentence(load_error("campplus", tiny_params("campplus", path), tmp_path))
    assert str(path) in sentence and "weights-only" in sentence


def test_a_file_without_a_state_dict_is_refused(tmp_path, one_sentence):
    path = tmp_path / "campplus.pt"
    torch.save({"epoch": 3, "optimizer": {"lr": 0.1}}, path)
    sentence = one_sentence(load_error("campplus", tiny_params("campplus", path), tmp_path))
    assert str(path) in sentence and "state dict" in sentence and "'model'" in sentence


def test_a_format_that_does_not_fit_the_file(tmp_path, one_sentence):
    folder = write_checkpoint(tmp_path / "m", "campplus", "3dspeaker")
    path = folder / "campplus_voxceleb.bin"
    (sentence,) = missing_paths("campplus", {"source": str(path), "format": "onnx"})
    assert "ONNX" in one_sentence(sentence)


def test_audio_too_short_to_pool_is_one_sentence(tmp_path, one_sentence):
    folder = write_checkpoint(tmp_path / "m", "eres2net", "3dspeaker")
    encoder = make_encoder("eres2net", tiny_params("eres2net", folder), tmp_path)
    assert encoder.embed(voice(1680 / 16000)).shape == (24,)  # 9 frames: the shortest that pools
    with pytest.raises(DataError) as caught:
        encoder.embed(voice(1679 / 16000))
    assert "at least 1680" in one_sentence(str(caught.value))


def test_a_too_short_utterance_of_a_corpus_names_its_file(tmp_path, one_sentence):
    import soundfile as sf

    from vpeval.errors import BadAudioError
    from vpeval.testing.dummies import make_corpus

    corpus = make_corpus(tmp_path / "corpus", speakers=1, utterances=2, seconds=0.5)
    short = corpus.utterances[1]
    sf.write(short.path, voice(0.04), 16000, subtype="PCM_16")  # 640 samples: under CAM++'s 720
    folder = write_checkpoint(tmp_path / "m", "campplus", "3dspeaker")
    with pytest.raises(BadAudioError) as caught:
        make_encoder("campplus", tiny_params("campplus", folder), tmp_path).embed_corpus(corpus)
    assert short.path in one_sentence(str(caught.value)) and "at least 720" in str(caught.value)


def test_feat_dim_must_divide_by_eight():
    from pydantic import ValidationError

    from vpeval.build import validate_params

    with pytest.raises(ValidationError, match="multiple of 8"):
        validate_params(get_plugin_manager().get("encoder", "campplus"), {"source": "x", "feat_dim": 60})


def test_unused_network_is_unchanged(tmp_path):
    """Loading never edits the user's file (WeSpeaker's head is dropped in memory only)."""
    folder = write_checkpoint(tmp_path / "m", "campplus", "wespeaker")
    before = (folder / "avg_model.pt").read_bytes()
    make_encoder("campplus", tiny_params("campplus", folder), tmp_path).embed(voice(0.5))
    assert (folder / "avg_model.pt").read_bytes() == before
    assert "projection.weight" in published_network("campplus", "wespeaker").state_dict()
