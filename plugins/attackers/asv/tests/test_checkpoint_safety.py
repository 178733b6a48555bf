"""A checkpoint that is not plain tensors (a pickle payload, a truncated or foreign file) is refused in one
sentence naming the file, and nothing in it runs."""

from __future__ import annotations

import os
import pickle
import re

import pytest
import torch

from vpeval.errors import MissingModelError, UserError
from vpeval_asv.checkpoint import WEIGHTS, load_weights, save_model
from vpeval_asv.models import ModelConfig, build_embedding_model

FIELD = "attackers[0].params.init_from"


class RunsACommand:
    """Unpickling this calls os.system(command): what a malicious checkpoint does."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


@pytest.fixture
def folder(tmp_path):
    config = ModelConfig("ecapa", 16, (16, 16, 16, 16, 48), 16)
    save_model(tmp_path / "model", config, build_embedding_model(config))
    return tmp_path / "model"


def test_a_saved_folder_loads(folder):
    config, model = load_weights(folder, FIELD)
    assert config.embedding_dim == 16 and not model.training


@pytest.mark.parametrize("writer", ["pickle", "torch.save"])
def test_pickle_payload_is_refused_without_running(folder, tmp_path, writer):
    marker = tmp_path / "payload-ran"
    payload = {"weight": RunsACommand(f"touch {marker}")}
    if writer == "pickle":
        with open(folder / WEIGHTS, "wb") as f:
            pickle.dump(payload, f)
    else:
        torch.save(payload, folder / WEIGHTS)
    with pytest.raises(MissingModelError) as info:
        load_weights(folder, FIELD)
    message = str(info.value)
    assert message.startswith(f"{folder / WEIGHTS} is not a weights-only checkpoint (")
    assert "\n" not in message and "Weights only load failed" not in message
    assert not marker.exists()


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", b"PK\x03\x04broken zip"])
def test_truncated_or_foreign_file_is_refused(folder, content):
    (folder / WEIGHTS).write_bytes(content)
    with pytest.raises(UserError, match="is not a weights-only checkpoint"):
        load_weights(folder, FIELD)


def test_weights_of_another_network_are_refused(folder):
    other = ModelConfig("ecapa", 16, (24, 24, 24, 24, 48), 16)
    torch.save(build_embedding_model(other).state_dict(), folder / WEIGHTS)
    with pytest.raises(MissingModelError, match=re.escape(FIELD) + ": .* does not hold the weights of ecapa"):
        load_weights(folder, FIELD)


def test_a_config_of_absurd_size_is_refused_before_building(folder):
    import json

    config = json.loads((folder / "config.json").read_text())
    config["channels"] = [16, 16, 16, 16, 10**12]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(MissingModelError, match=re.escape(FIELD) + ": .*config.json describes ecapa"):
        load_weights(folder, FIELD)
