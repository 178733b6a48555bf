"""ONNX exports through onnxruntime: the published export calls on the tiny published networks, read by the encoders.

torch.onnx.export (the TorchScript exporter, dynamo=False) needs the `onnx` package, which requirements.lock
does not pin; without it these tests skip (onnxruntime, which the plugin uses, is pinned).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threedspeaker_testing import make_encoder, published_network, tiny_params, voice, write_checkpoint

pytest.importorskip("onnx", reason="torch.onnx.export needs the onnx package (not in requirements.lock)")

# (input, output) names of 3D-Speaker's export_speaker_embedding_onnx.py and WeSpeaker's export_onnx.py
NAMES = {"3dspeaker": ("feature", "embedding"), "wespeaker": ("feats", "embs")}


def export(network: torch.nn.Module, path, layout: str) -> None:
    """As the published scripts export: dynamic batch and frame axes, a dummy fbank input."""
    source, target = NAMES[layout]
    if layout == "wespeaker":
        network = _Embeds(network)
    torch.onnx.export(
        network,
        (torch.randn(1, 345, 16),),
        str(path),
        dynamo=False,
        export_params=True,
        opset_version=14,
        do_constant_folding=True,
        input_names=[source],
        output_names=[target],
        dynamic_axes={source: {0: "B", 1: "T"}, target: {0: "B"}},
    )


class _Embeds(torch.nn.Module):
    """WeSpeaker's export wrapper: the embedding minus a mean vector (zeros without --mean_vec)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.register_buffer("mean_vec", torch.zeros(24))

    def forward(self, feats):
        return self.model(feats) - self.mean_vec


@pytest.mark.parametrize("architecture", ["campplus", "eres2net"])
@pytest.mark.parametrize("layout", ["3dspeaker", "wespeaker"])
def test_an_onnx_export_gives_the_checkpoints_embedding(tmp_path, architecture, layout):
    torch_folder = write_checkpoint(tmp_path / "torch", architecture, layout, seed=5)
    onnx_folder = tmp_path / "onnx"
    onnx_folder.mkdir()
    network = published_network(architecture, layout, seed=5)
    if layout == "wespeaker":
        del network.projection  # WeSpeaker's exporter builds the model without its training head
    export(network, onnx_folder / "avg_model.onnx", layout)
    (onnx_folder / "config.yaml").write_text("{}\n")
    from_onnx = make_encoder(architecture, tiny_params(architecture, onnx_folder), tmp_path)
    from_torch = make_encoder(architecture, tiny_params(architecture, torch_folder), tmp_path)
    audios = [voice(1.4, speaker=1), voice(0.5, speaker=2)]
    got = from_onnx.embed_batch(audios)
    want = np.stack([from_torch.embed(a) for a in audios])
    assert from_onnx.layout == layout  # read from the input's name
    assert from_onnx.dim == want.shape[1]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_a_folder_with_both_prefers_the_checkpoint_unless_told(tmp_path):
    folder = write_checkpoint(tmp_path / "m", "campplus", "3dspeaker", seed=6)
    export(published_network("campplus", "3dspeaker", seed=7), folder / "campplus.onnx", "3dspeaker")  # other weights
    audio = voice(0.9)
    torch_embedding = make_encoder("campplus", tiny_params("campplus", folder), tmp_path).embed(audio)
    onnx_embedding = make_encoder("campplus", tiny_params("campplus", folder, format="onnx"), tmp_path).embed(audio)
    assert not np.allclose(torch_embedding, onnx_embedding, atol=1e-3)


def test_an_unknown_input_name_needs_the_layout(tmp_path, one_sentence):
    from vpeval.errors import MissingModelError

    network = published_network("campplus", "3dspeaker")
    torch.onnx.export(
        network,
        (torch.randn(1, 100, 16),),
        str(tmp_path / "x.onnx"),
        dynamo=False,
        input_names=["input"],
        output_names=["out"],
        dynamic_axes={"input": {1: "T"}},
    )
    with pytest.raises(MissingModelError) as caught:
        make_encoder("campplus", tiny_params("campplus", tmp_path / "x.onnx"), tmp_path).embed(voice(0.5))
    assert "layout" in one_sentence(str(caught.value))
    encoder = make_encoder("campplus", tiny_params("campplus", tmp_path / "x.onnx", layout="3dspeaker"), tmp_path)
    assert encoder.embed(voice(0.5)).shape == (24,)
