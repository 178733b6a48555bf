"""Tiny random-weight SpeechBrain folders in the exact layouts VoicePrivacy ships, written with speechbrain's
own classes: for tests and for trying a recipe end to end without the released models (never results).

- `write_ecapa_folder` / `write_xvector_folder`: exp/asv_orig (VPC 2024's asv_pre_ecapa): hyperparams.yaml as
  the toolkit's evaluation/privacy/asv/asv_train/hparams/{ecapa,xvector}/hyperparams.yaml (small channels),
  embedding_model.ckpt (and classifier.ckpt / mean_var_norm_emb.ckpt when asked).
- `write_asv_ssl_folder`: VPC 2026's exp/asv_ssl (the two-stream ECAPA's embedding_model.ckpt) with a tiny
  transformers WavLM folder standing in for WavLM-Large.pt (give it as the attacker's ssl_model).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

ECAPA_YAML = """\
# ################################
# Model: Speaker Verification Baseline (VoicePrivacy ecapa/hyperparams.yaml, channels scaled down)
# ################################

seed: 1234
__set_seed: !apply:torch.manual_seed [!ref <seed>]
device: 'cuda:0'

# Feature parameters
n_mels: 80
left_frames: 0
right_frames: 0
deltas: False
emb_dim: 16

compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>

mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False

embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN
    input_size: !ref <n_mels>
    channels: {channels}
    kernel_sizes: [5, 3, 3, 3, 1]
    dilations: [1, 2, 3, 4, 1]
    #groups: [1, 1, 1, 1, 1]
    attention_channels: 128
    lin_neurons: !ref <emb_dim>

mean_var_norm_emb: !new:speechbrain.processing.features.InputNormalization
    norm_type: {emb_norm}
    std_norm: True

classifier: !new:speechbrain.lobes.models.ECAPA_TDNN.Classifier
    input_size: !ref <emb_dim>
    out_neurons: 7

modules:
    compute_features: !ref <compute_features>
    embedding_model: !ref <embedding_model>
    mean_var_norm: !ref <mean_var_norm>
    classifier: !ref <classifier>


pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>{extra_loadables}
"""

XVECTOR_YAML = """\
# ################################
# Model: Speaker identification with x-vectors (VoicePrivacy xvector/hyperparams.yaml, scaled down)
# ################################

seed: 1986
__set_seed: !apply:torch.manual_seed [!ref <seed>]
device: 'cuda:0'

n_mels: 24
left_frames: 0
right_frames: 0
deltas: False

compute_features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
    left_frames: !ref <left_frames>
    right_frames: !ref <right_frames>
    deltas: !ref <deltas>

mean_var_norm: !new:speechbrain.processing.features.InputNormalization
    norm_type: sentence
    std_norm: False

embedding_model: !new:speechbrain.lobes.models.Xvector.Xvector
    in_channels: !ref <n_mels>
    activation: !name:torch.nn.LeakyReLU
    tdnn_blocks: 5
    tdnn_channels: [16, 16, 16, 16, 40]
    tdnn_kernel_sizes: [5, 3, 3, 1, 1]
    tdnn_dilations: [1, 2, 3, 1, 1]
    lin_neurons: 12

classifier: !new:speechbrain.lobes.models.Xvector.Classifier
    input_shape: [null, null, 12]
    activation: !name:torch.nn.LeakyReLU
    lin_blocks: 1
    lin_neurons: 12
    out_neurons: 7

modules:
    compute_features: !ref <compute_features>
    mean_var_norm: !ref <mean_var_norm>
    embedding_model: !ref <embedding_model>
    classifier: !ref <classifier>

pretrainer: !new:speechbrain.utils.parameter_transfer.Pretrainer
    loadables:
        embedding_model: !ref <embedding_model>
"""


def _randomise(module: torch.nn.Module, seed: int) -> None:
    """Random weights and batch-norm statistics, so every loaded tensor matters."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if not tensor.is_floating_point():
                continue
            noise = torch.randn(tensor.shape, generator=generator)
            if name.endswith("running_var"):
                tensor.copy_(0.5 + noise.abs())
            else:
                tensor.copy_(noise * (0.3 if name.endswith("running_mean") else 0.2))


def write_ecapa_folder(
    folder: Path,
    seed: int = 0,
    classifier: bool = False,
    emb_norm: bool = False,
    channels: tuple[int, ...] = (16, 16, 16, 16, 48),
) -> Path:
    """`channels` (512, 512, 512, 512, 1536) is the released asv_orig's size (random weights all the same)."""
    from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN, Classifier
    from speechbrain.processing.features import InputNormalization

    folder.mkdir(parents=True, exist_ok=True)
    extra = ""
    if classifier:
        extra += "\n        classifier: !ref <classifier>"
    if emb_norm:
        extra += "\n        mean_var_norm_emb: !ref <mean_var_norm_emb>"
    text = ECAPA_YAML.replace("{emb_norm}", "global" if emb_norm else "sentence").replace("{extra_loadables}", extra)
    text = text.replace("{channels}", str(list(channels)))
    (folder / "hyperparams.yaml").write_text(text)
    model = ECAPA_TDNN(
        80, channels=list(channels), kernel_sizes=[5, 3, 3, 3, 1], dilations=[1, 2, 3, 4, 1], lin_neurons=16
    )
    _randomise(model, seed)
    torch.save(model.state_dict(), folder / "embedding_model.ckpt")
    if classifier:
        head = Classifier(input_size=16, out_neurons=7)
        _randomise(head, seed + 1)
        torch.save(head.state_dict(), folder / "classifier.ckpt")
    if emb_norm:
        norm = InputNormalization(norm_type="global", std_norm=True)
        norm.train()
        norm(torch.randn(50, 1, 16) * 0.3 + 0.1, torch.ones(50))  # global statistics of random embeddings
        norm._save(folder / "mean_var_norm_emb.ckpt")
    return folder


def write_xvector_folder(folder: Path, seed: int = 0) -> Path:
    from speechbrain.lobes.models.Xvector import Xvector

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hyperparams.yaml").write_text(XVECTOR_YAML)
    model = Xvector(
        in_channels=24,
        activation=torch.nn.LeakyReLU,
        tdnn_blocks=5,
        tdnn_channels=[16, 16, 16, 16, 40],
        tdnn_kernel_sizes=[5, 3, 3, 1, 1],
        tdnn_dilations=[1, 2, 3, 1, 1],
        lin_neurons=12,
    )
    _randomise(model, seed)
    torch.save(model.state_dict(), folder / "embedding_model.ckpt")
    return folder


def write_tiny_wavlm(folder: Path, width: int = 16, layers: int = 3, seed: int = 0, norm: str = "group") -> Path:
    """A random transformers WavLM (`layers` layers of `width`), saved with its preprocessor config. `norm`
    "group": Base+'s group norm in the CNN's first block, post-norm layers; "layer": Large's layer norms."""
    from transformers import WavLMConfig, WavLMModel

    config = WavLMConfig(
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=[16] * 7,
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=4,
        num_buckets=32,
        max_bucket_distance=64,
        feat_extract_norm=norm,
        do_stable_layer_norm=norm == "layer",
    )
    torch.manual_seed(seed)
    WavLMModel(config).eval().save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps({"do_normalize": False, "sampling_rate": 16000}))
    return folder


def write_asv_ssl_folder(
    folder: Path, wavlm_folder: Path, seed: int = 1, layers: int = 3, norm: str = "group"
) -> tuple[Path, Path]:
    """asv_ssl's embedding_model.ckpt (random two-stream ECAPA, 80 mels, channels [16, 16, 16, 16, 48],
    12-d) and a tiny WavLM of width 16 (`norm` as write_tiny_wavlm) at wavlm_folder; returns both folders."""
    from vpeval_speechbrain.ssl import EcapaSsl, save_ssl_network

    write_tiny_wavlm(wavlm_folder, width=16, layers=layers, norm=norm)
    torch.manual_seed(seed)
    network = EcapaSsl(80, [16, 16, 16, 16, 48], layers, lin_neurons=12).eval()
    _randomise(network, seed)
    with torch.no_grad():  # a wider spread: at _randomise's 0.2 every utterance of the VPC test tree had the same
        for name, tensor in network.named_parameters():  # 12 signs, so toolkit-sign embeddings (the VPC 2026
            if name.endswith("weight") and tensor.dim() > 1:  # recipes') were all equal; x3: 17 of 30 differ
                tensor.mul_(3.0)
        network.fc.conv.bias.zero_()
    save_ssl_network(network, folder)
    return folder, wavlm_folder
