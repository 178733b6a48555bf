"""VPC 2026's asv_ssl folder: WavLM layers (vpeval's wavlm frontend) + the two-stream ECAPA, as the toolkit.

The reference is a transcription, in this test, of the toolkit's ECAPA_TDNN_test and resample_tensor
(evaluation/privacy/asv/ecapa_model_wavlm_24layer.py) and of speechbrain_vectors.extract_vector's
ecapa_ssl branch, with the WavLM layers taken from transformers' WavLMModel directly. Its state dict,
saved with DataParallel's `module.` prefix, is the folder's embedding_model.ckpt.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from speechbrain.lobes.models.ECAPA_TDNN import (
    AttentiveStatisticsPooling,
    BatchNorm1d,
    Conv1d,
    SERes2NetBlock,
    TDNNBlock,
)

from vpeval.build import validate_params
from vpeval.errors import ConfigError, MissingModelError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval_speechbrain.ssl import resample_frames
from vpeval_speechbrain.tiny import write_tiny_wavlm

WIDTH, LAYERS, CHANNELS = 16, 3, [16, 16, 16, 16, 48]


def vpc_resample(tensor, target_length):  # VPC's resample_tensor, loop for loop
    B, D, T = tensor.shape
    if T == target_length:
        return tensor
    if T > target_length:
        base_bin, extra = T // target_length, T % target_length
        outputs, idx = [], 0
        for _ in range(target_length - extra):
            outputs.append(tensor[:, :, idx : idx + base_bin].mean(dim=2, keepdim=True))
            idx += base_bin
        for _ in range(extra):
            outputs.append(tensor[:, :, idx : idx + base_bin + 1].mean(dim=2, keepdim=True))
            idx += base_bin + 1
        return torch.cat(outputs, dim=2)
    num_repeats, remainder = target_length // T, target_length % T
    return torch.cat([tensor.repeat(1, 1, num_repeats), tensor[:, :, :remainder]], dim=2)


class VpcWeightedLayerSum(torch.nn.Module):
    def __init__(self, num_layers):
        super().__init__()
        self.num_layers = num_layers
        self.layer_weights = torch.nn.Parameter(torch.ones(num_layers))

    def forward(self, layer_results):
        w = F.softmax(self.layer_weights, dim=0).view((self.num_layers,) + (1,) * (layer_results.dim() - 1))
        return (layer_results * w).sum(dim=0)


class VpcEcapaSsl(torch.nn.Module):  # ECAPA_TDNN_test with the toolkit's structure, small sizes
    def __init__(self, input_size=80, channels=CHANNELS, num_layers=LAYERS, lin_neurons=12):
        super().__init__()
        k, d = [5, 3, 3, 3, 1], [1, 2, 3, 4, 1]
        self.blocks = torch.nn.ModuleList([TDNNBlock(input_size, channels[0], k[0], d[0], torch.nn.ReLU, 1, 0.3)])
        for i in range(1, len(channels) - 1):
            self.blocks.append(SERes2NetBlock(channels[i - 1], channels[i], 8, 128, k[i], d[i], dropout=0.3))
        self.blocks_features = torch.nn.ModuleList(
            SERes2NetBlock(channels[i], channels[i], 8, 128, k[i], d[i], dropout=0.3) for i in range(4)
        )
        self.mfa = TDNNBlock(channels[-2] * 3, channels[-1], k[-1], d[-1], torch.nn.ReLU, groups=1, dropout=0.3)
        self.weighted_sum = VpcWeightedLayerSum(num_layers)
        self.asp = AttentiveStatisticsPooling(channels[-1], attention_channels=128, global_context=True)
        self.asp_bn = BatchNorm1d(input_size=channels[-1] * 2)
        self.fc = Conv1d(in_channels=channels[-1] * 2, out_channels=lin_neurons, kernel_size=1)

    def forward(self, x, features):
        features = self.weighted_sum(features.permute(1, 2, 0, 3))
        x = x.transpose(1, 2)
        features = features.transpose(0, 1).transpose(1, 2)
        xl, xl_features = [], []
        for layer in self.blocks:
            x = layer(x)
            xl.append(x)
        for layer in self.blocks_features:
            features = layer(features)
            xl_features.append(features)
        x_cat = torch.cat(xl[1:], dim=1)
        x_feature_cat = vpc_resample(torch.cat(xl_features[1:], dim=1), len(x_cat[0][0]))
        return self.fc(self.asp_bn(self.asp(self.mfa(x_feature_cat * x_cat)))).transpose(1, 2)


def _tiny_wavlm(folder):
    """The package's tiny WavLM writer (the same random model), read back for the reference forward."""
    from transformers import WavLMModel

    return WavLMModel.from_pretrained(write_tiny_wavlm(folder, WIDTH, LAYERS)).eval()


@pytest.fixture
def asv_ssl(tmp_path):
    folder = tmp_path / "asv_ssl"
    folder.mkdir()
    wavlm = _tiny_wavlm(tmp_path / "wavlm")
    torch.manual_seed(1)
    network = VpcEcapaSsl().eval()
    with torch.no_grad():
        for name, tensor in network.state_dict().items():
            if tensor.is_floating_point():
                tensor.add_(
                    0.2 * torch.randn_like(tensor).abs() if "running_var" in name else 0.2 * torch.randn_like(tensor)
                )
    torch.save({"module." + k: v for k, v in network.state_dict().items()}, folder / "embedding_model.ckpt")
    return folder, tmp_path / "wavlm", wavlm, network


def _reference(wavlm, network, audio):
    """extract_vector's ecapa_ssl branch: Fbank on the trimmed, peak-normalised wave; WavLM on the file."""
    from speechbrain.lobes.features import Fbank
    from speechbrain.processing.features import InputNormalization

    prepared = np.trim_zeros(audio.astype(np.float64) / np.abs(audio).max()).astype(np.float32)
    with torch.no_grad():
        feats = Fbank(n_mels=80)(torch.from_numpy(prepared).unsqueeze(0))
        feats = InputNormalization(norm_type="sentence", std_norm=False)(feats, torch.ones(1))
        hidden = wavlm(torch.from_numpy(audio).unsqueeze(0), output_hidden_states=True).hidden_states[1:]
        layer_reps = torch.stack(list(hidden), dim=0).permute(1, 0, 2, 3)  # [B, K, T, D], as VPC's extractor
        return F.normalize(network(feats, layer_reps), dim=-1).squeeze().numpy()


def test_resample_frames_is_vpcs():
    x = torch.randn(2, 3, 17)
    for target in (17, 5, 16, 30, 34, 51, 40):
        torch.testing.assert_close(resample_frames(x, target), vpc_resample(x, target), rtol=0, atol=1e-6)


def test_asv_ssl_embeddings_equal_the_toolkits(asv_ssl, tmp_path, audio):
    folder, wavlm_folder, wavlm, network = asv_ssl
    cls = get_plugin_manager().get("encoder", "speechbrain")
    params = validate_params(cls, {"source": str(folder), "ssl_model": str(wavlm_folder)})
    encoder = cls(params, plugin_context(work_dir=tmp_path / "w"))
    waves = [np.concatenate([np.zeros(500, np.float32), audio(s, i)]) for i, s in enumerate([0.8, 1.5])]
    ours = encoder.embed_batch(waves)
    assert encoder.dim == 12 and ours.shape == (2, 12)
    for wave, vector in zip(waves, ours):
        np.testing.assert_allclose(vector, _reference(wavlm, network, wave), rtol=0, atol=1e-5)
    assert np.linalg.norm(ours, axis=1) == pytest.approx([1.0, 1.0])


def test_asv_ssl_faults_are_sentences(asv_ssl, tmp_path):
    folder, wavlm_folder, _, _ = asv_ssl
    cls = get_plugin_manager().get("attacker", "speechbrain-train")
    params = validate_params(cls, {"source": str(folder), "ssl_model": str(wavlm_folder), "recipe": "vpc2024"})
    with pytest.raises(ConfigError, match="asv_ssl network is fine-tuned from its folder, not trained from scratch"):
        cls(params, plugin_context(work_dir=tmp_path / "t")).train(None)
    state = torch.load(folder / "embedding_model.ckpt", weights_only=True)
    torch.save({k: v for k, v in state.items() if "weighted_sum" not in k}, folder / "embedding_model.ckpt")
    enc = get_plugin_manager().get("encoder", "speechbrain")
    encoder = enc(validate_params(enc, {"source": str(folder), "ssl_model": str(wavlm_folder)}), plugin_context())
    with pytest.raises(MissingModelError, match="is not the two-stream ECAPA of VPC 2026's asv_ssl"):
        encoder.prepare()


def test_asv_ssl_fine_tuning_by_the_track1_recipe(asv_ssl, tmp_path):
    """Fine-tuned from the released weights (close to them, not equal), saved and loaded back as asv_ssl."""
    from vpeval.testing.dummies import make_corpus
    from vpeval.types import TrainingData, TrainingStage

    folder, wavlm_folder, _, _ = asv_ssl
    corpus = make_corpus(tmp_path / "audio", speakers=3, utterances=3, seconds=0.8)
    cls = get_plugin_manager().get("attacker", "speechbrain-train")
    raw = {"source": str(folder), "ssl_model": str(wavlm_folder), "recipe": "vpc2026-track1", "epochs": 1}
    params = validate_params(cls, {**raw, "train_batch_size": 4, "crop_seconds": 0.5, "lr": 1e-3})
    attacker = cls(params, plugin_context(work_dir=tmp_path / "w"))
    attacker.train(TrainingData([TrainingStage("original", corpus)], None, "original"))
    released = torch.load(folder / "embedding_model.ckpt", weights_only=True)
    source = {k.removeprefix("module."): v for k, v in released.items()}
    tuned = torch.load(attacker._trained / "embedding_model.ckpt", weights_only=True)
    change = max(float((tuned[k].float() - source[k].float()).abs().max()) for k in source if k.endswith("weight"))
    assert 0 < change < 0.05
    sides = [[u] for u in corpus.utterances[:3]]
    vectors = attacker.represent_many(sides)
    attacker.save(tmp_path / "saved")
    again = cls(params, plugin_context(work_dir=tmp_path / "w2"))
    again.load(tmp_path / "saved")
    np.testing.assert_allclose(again.represent_many(sides), vectors, rtol=0, atol=1e-6)
    assert json.loads((tmp_path / "saved" / "training_history.json").read_text())[0]["epoch"] == 1
    assert [e["selected"] for e in again.training_curve()] == [True]  # the runner reads it after training
