"""Test helpers: 3D-Speaker's packaged model code (speakerlab), tiny random-weight checkpoints written by it in the
published layouts (WeSpeaker's through wespeaker_layout), the published front ends, test audio. Imported by the
tests as threedspeaker_testing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from speakerlab.models.campplus.DTDNN import CAMPPlus
from speakerlab.models.eres2net.ERes2Net import ERes2Net
from wespeaker_layout import wespeaker_names, with_wespeaker_pooling

from vpeval.api import PluginContext
from vpeval.testing.dummies import speaker_voice, synthesize

# Tiny configurations of the published constructors, and the encoder params that describe them.
TINY_CAMPPLUS = {"feat_dim": 16, "growth_rate": 8, "bn_size": 2, "init_channels": 16}
TINY_ERES2NET = {"feat_dim": 16, "m_channels": 4, "num_blocks": [1, 2, 1, 1]}
EMBEDDING = 24


def randomize(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Random weights and batch-norm statistics (so eval-mode batch norm is no identity), in eval mode."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            if not tensor.dtype.is_floating_point:
                continue
            if name.endswith("running_var"):
                tensor.copy_(torch.rand(tensor.shape, generator=g) + 0.5)
            else:
                tensor.copy_(torch.randn(tensor.shape, generator=g) * 0.3)
    return module.eval()


def published_network(architecture: str, layout: str, seed: int = 0) -> torch.nn.Module:
    """The published code's tiny network with random weights; WeSpeaker's (3D-Speaker's network with WeSpeaker's
    pooling) with its training head attached, as its train.py saves avg_model.pt. Its tensor names are
    3D-Speaker's: published_state gives the layout's."""
    if architecture == "campplus":
        net = CAMPPlus(feat_dim=16, embedding_size=EMBEDDING, growth_rate=8, bn_size=2, init_channels=16)
    else:
        net = ERes2Net(num_blocks=[1, 2, 1, 1], m_channels=4, feat_dim=16, embedding_size=EMBEDDING)
    if layout == "wespeaker":
        net = with_wespeaker_pooling(net)
        net.add_module("projection", torch.nn.Linear(EMBEDDING, 7))  # stands in for the AAM-softmax head
    return randomize(net, seed)


def published_state(net: torch.nn.Module, layout: str) -> dict[str, torch.Tensor]:
    """The network's state dict under the layout's published tensor names."""
    state = net.state_dict()
    return wespeaker_names(state) if layout == "wespeaker" else state


def tiny_params(architecture: str, source: Path | str, **overrides) -> dict:
    base = TINY_CAMPPLUS if architecture == "campplus" else TINY_ERES2NET
    return {**base, "source": str(source), **overrides}


def write_checkpoint(folder: Path, architecture: str, layout: str, seed: int = 0) -> Path:
    """A model folder as published: the state dict under the published file name, and an unrelated config."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {
        ("campplus", "3dspeaker"): "campplus_voxceleb.bin",
        ("eres2net", "3dspeaker"): "pretrained_eres2net.ckpt",
        ("campplus", "wespeaker"): "avg_model.pt",
        ("eres2net", "wespeaker"): "avg_model.pt",
    }
    net = published_network(architecture, layout, seed)
    torch.save(published_state(net, layout), folder / names[architecture, layout])
    (folder / ("configuration.json" if layout == "3dspeaker" else "config.yaml")).write_text("{}\n")
    return folder


def published_fbank(audio: np.ndarray, layout: str, num_mel_bins: int = 16) -> torch.Tensor:
    """The published front ends, as written there: 3D-Speaker's FBank(mean_nor=True) (speakerlab/process/
    processor.py) and WeSpeaker's compute_fbank + CMN (wespeaker/bin/infer_onnx.py)."""
    import torchaudio.compliance.kaldi as Kaldi

    wav = torch.from_numpy(np.asarray(audio, dtype=np.float32)).unsqueeze(0)
    if layout == "3dspeaker":
        feat = Kaldi.fbank(wav, num_mel_bins=num_mel_bins, sample_frequency=16000, dither=0)
        return feat - feat.mean(0, keepdim=True)
    waveform = wav * (1 << 15)
    mat = Kaldi.fbank(
        waveform,
        num_mel_bins=num_mel_bins,
        frame_length=25,
        frame_shift=10,
        dither=0.0,
        sample_frequency=16000,
        window_type="hamming",
        use_energy=False,
    )
    return mat - torch.mean(mat, dim=0)


def voice(seconds: float, speaker: int = 0, seed: int = 0) -> np.ndarray:
    return synthesize(speaker_voice(speaker), seconds, 16000, np.random.default_rng([seed, speaker]))


def make_encoder(architecture: str, params: dict, tmp_path: Path | None = None):
    from vpeval.build import validate_params
    from vpeval.plugins import get_plugin_manager

    cls = get_plugin_manager().get("encoder", architecture)
    context = PluginContext(work_dir=Path(tmp_path or ".") / "work")
    return cls(validate_params(cls, params), context)
