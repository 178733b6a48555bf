"""Test helpers: the vendored published model code (tests/reference), tiny random-weight checkpoints written by it
in the published layouts, the published front ends, test audio. Imported by the tests as threedspeaker_testing."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import torch

from vpeval.api import PluginContext
from vpeval.testing.dummies import speaker_voice, synthesize

REFERENCE = Path(__file__).parent / "reference"
PACKAGE = "vpeval_3dspeaker_reference"

# Tiny configurations of the published constructors, and the encoder params that describe them.
TINY_CAMPPLUS = {"feat_dim": 16, "growth_rate": 8, "bn_size": 2, "init_channels": 16}
TINY_ERES2NET = {"feat_dim": 16, "m_channels": 4, "num_blocks": [1, 2, 1, 1]}
EMBEDDING = 24


def reference(module: str):
    """A vendored published module (speakerlab_dtdnn, wespeaker_eres2net, ...), imported as a package of its own."""
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, REFERENCE / "__init__.py", submodule_search_locations=[str(REFERENCE)]
        )
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"{PACKAGE}.{module}")


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
    """The published code's tiny network with random weights; WeSpeaker's with its training head attached,
    as its train.py saves avg_model.pt."""
    if (architecture, layout) == ("campplus", "3dspeaker"):
        net = reference("speakerlab_dtdnn").CAMPPlus(
            feat_dim=16, embedding_size=EMBEDDING, growth_rate=8, bn_size=2, init_channels=16
        )
    elif (architecture, layout) == ("eres2net", "3dspeaker"):
        net = reference("speakerlab_eres2net").ERes2Net(
            num_blocks=[1, 2, 1, 1], m_channels=4, feat_dim=16, embedding_size=EMBEDDING
        )
    elif (architecture, layout) == ("campplus", "wespeaker"):
        net = reference("wespeaker_campplus").CAMPPlus(
            feat_dim=16, embed_dim=EMBEDDING, growth_rate=8, bn_size=2, init_channels=16
        )
    else:
        net = reference("wespeaker_eres2net").ERes2Net(4, [1, 2, 1, 1], feat_dim=16, embed_dim=EMBEDDING)
    if layout == "wespeaker":
        net.add_module("projection", torch.nn.Linear(EMBEDDING, 7))  # stands in for the AAM-softmax head
    return randomize(net, seed)


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
    torch.save(published_network(architecture, layout, seed).state_dict(), folder / names[architecture, layout])
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
