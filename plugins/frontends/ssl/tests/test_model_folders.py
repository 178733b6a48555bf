"""Hostile or damaged transformers folders: each fault is one sentence naming the file (exit 2), never a
library's traceback or a terabyte allocation."""

import json
import os
import shutil
import struct

import pytest
import torch

from vpeval.errors import MissingModelError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval_ssl_frontends.folder_checks import MAX_SIZE
from vpeval_ssl_frontends.tiny import tiny_folder

LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1362\n"
)


def make(kind: str, model):
    cls = get_plugin_manager().get("frontend", kind)
    return cls(cls.Params(model=str(model)), plugin_context())


@pytest.fixture
def folder(tmp_path):
    """A copy of the tiny HuBERT folder to damage."""
    return shutil.copytree(tiny_folder("hubert", "group"), tmp_path / "hubert")


def refusal(folder) -> str:
    with pytest.raises(MissingModelError) as err:
        _ = make("hubert", folder).loaded
    assert err.value.exit_code == 2
    return str(err.value)


def validate(folder) -> list[str]:
    cls = get_plugin_manager().get("frontend", "hubert")
    return cls.missing_paths(cls.Params(model=str(folder)))


def test_a_pickled_pytorch_model_bin_is_not_a_weights_only_checkpoint(folder, one_sentence):
    (folder / "model.safetensors").unlink()
    torch.save({"weight": torch.zeros(1), "payload": os.getcwd}, folder / "pytorch_model.bin")  # a pickled callable
    message = refusal(folder)
    assert one_sentence(message)
    assert str(folder / "pytorch_model.bin") in message and "not a weights-only checkpoint" in message


def _rewrite_header(path, header_length: int | None = None, tensor_end: int | None = None):
    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8 : 8 + length]), data[8 + length :]
    if tensor_end is not None:
        name = next(key for key in header if key != "__metadata__")
        header[name]["data_offsets"][1] = tensor_end
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw) if header_length is None else header_length) + raw + body)


@pytest.mark.parametrize("claim", ["header", "tensor"])
def test_a_safetensors_header_claiming_2_to_the_60_bytes_is_named(folder, claim, one_sentence):
    weights = folder / "model.safetensors"
    if claim == "header":
        _rewrite_header(weights, header_length=1 << 60)
    else:
        _rewrite_header(weights, tensor_end=1 << 60)
    for message in [refusal(folder), *validate(folder)]:
        assert one_sentence(message) and str(weights) in message and "not a readable safetensors file" in message
    assert len(validate(folder)) == 1  # validate names it before anything loads


@pytest.mark.parametrize("value", [1e9, 10**9, float("inf")])
def test_a_config_size_beyond_the_bound_is_refused_before_building(folder, value, one_sentence):
    config = json.loads((folder / "config.json").read_text())
    config["hidden_size"] = value
    (folder / "config.json").write_text(json.dumps(config))
    for message in [refusal(folder), *validate(folder)]:
        assert one_sentence(message), message
        assert str(folder / "config.json") in message and "`hidden_size`" in message and str(MAX_SIZE) in message


def test_sizes_inside_lists_are_bounded_and_a_vocabulary_is_not_a_size(folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": 250_000, "pad_token_id": 100_000}))
    assert validate(folder) == []  # the base network allocates nothing from either
    (folder / "config.json").write_text(json.dumps({**config, "conv_dim": [16] * 6 + [10**8]}))
    assert "`conv_dim[6]` = 100000000" in validate(folder)[0]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (LFS_POINTER, "is a git-lfs pointer, not the file itself"),
        ('{"model_type": "hubert",', "is not JSON (Expecting"),
        ("[1, 2]", "holds a JSON list, not an object"),
    ],
    ids=["lfs-pointer", "truncated", "list"],
)
def test_a_config_that_is_not_a_json_object_is_named(folder, text, says, one_sentence):
    (folder / "config.json").write_text(text)
    for message in [refusal(folder), *validate(folder)]:
        assert one_sentence(message) and str(folder / "config.json") in message and says in message, message


def test_a_weights_file_that_is_a_git_lfs_pointer_is_named(folder, one_sentence):
    (folder / "model.safetensors").write_text(LFS_POINTER)
    message = refusal(folder)
    assert one_sentence(message) and str(folder / "model.safetensors") in message and "git-lfs pointer" in message


def test_a_preprocessor_config_that_is_not_json_is_named(folder, one_sentence):
    (folder / "preprocessor_config.json").write_text(LFS_POINTER)
    message = refusal(folder)
    assert one_sentence(message) and str(folder / "preprocessor_config.json") in message
