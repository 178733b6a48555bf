"""A tiny random-weight SSL-SAS release folder in the published layout and key names.

    MODEL/HiFi-GAN/<type>/config.json, g_00000001 ({"generator": latentGenerator state dict: the HiFi-GAN
    keys, latent_encoder.ssl_model.* (fairseq HuBERT names), latent_encoder.W, xv_model.* (ECAPA)})
    MODEL/HuBERT_soft/soft_model.pt (SoftPredictor: ssl_model.*, W)
    MODEL/ECAPA-TDNN/embedding_model.ckpt (speechbrain ECAPA_TDNN)

The HuBERT weights are written under fairseq's names, listed here from fairseq's HubertModel (after
remove_pretraining_modules), not from vpeval's mapping.
"""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import torch

from vpeval.testing.dummies import write_pool_manifest

MODEL_TYPE = "libri_tts_clean_100_fbank_xv_ssl_freeze"
UNITS = 8
SPEAKER_DIM = 192
HIDDEN = 32
CONV = 16
KERNELS = (10, 3, 3, 3, 3, 2, 2)
POS_KERNEL, POS_GROUPS = 16, 4
FFN = 64
LAYERS = 1
TINY_HUBERT = {
    "hidden": HIDDEN,
    "conv": CONV,
    "pos_kernel": POS_KERNEL,
    "pos_groups": POS_GROUPS,
    "ffn": FFN,
    "layers": LAYERS,
}
# fairseq's HuBERT Base (hubert_base_ls960): what the release's soft encoder wraps.
BASE_HUBERT = {"hidden": 768, "conv": 512, "pos_kernel": 128, "pos_groups": 16, "ffn": 3072, "layers": 12}
# Upsampling 5 x 4 x 8 = 160 samples per 10 ms frame, as the release's 5 x 4 x 2 x 2 x 2.
TINY_CONFIG = {
    "soft_model_path": "pretrained_models_anon_xv/HuBERT_soft/soft_model.pt",
    "hubert_model_path": "pretrained_models_anon_xv/hubert_base_ls960.pt",
    "ecapa_fbank_model_path": "pretrained_models_anon_xv/ECAPA-TDNN/embedding_model.ckpt",
    "ssl_freeze": True,
    "xv_freeze": True,
    "model_in_dim": UNITS + 1 + SPEAKER_DIM,
    "resblock": "1",
    "upsample_rates": [5, 4, 8],
    "upsample_kernel_sizes": [11, 8, 16],
    "upsample_initial_channel": 16,
    "resblock_kernel_sizes": [3],
    "resblock_dilation_sizes": [[1, 3, 5]],
    "latent": True,
    "f0": True,
    "f0_interp": False,
    "xv": True,
    "sampling_rate": 16000,
}


def fairseq_hubert(generator: torch.Generator, shape: dict | None = None) -> dict[str, torch.Tensor]:
    """A random fairseq HuBERT state dict (group-norm extractor, post-LN transformer), fairseq's key names."""
    shape = shape or TINY_HUBERT
    HIDDEN, CONV, FFN = shape["hidden"], shape["conv"], shape["ffn"]  # noqa: N806
    POS_KERNEL, POS_GROUPS, LAYERS = shape["pos_kernel"], shape["pos_groups"], shape["layers"]  # noqa: N806

    def rand(*shape, scale=0.2):
        return torch.randn(*shape, generator=generator) * scale

    state = {}
    cin = 1
    for i, k in enumerate(KERNELS):
        state[f"feature_extractor.conv_layers.{i}.0.weight"] = rand(CONV, cin, k, scale=0.5)
        cin = CONV
    state["feature_extractor.conv_layers.0.2.weight"] = 1 + rand(CONV, scale=0.1)
    state["feature_extractor.conv_layers.0.2.bias"] = rand(CONV, scale=0.1)
    state["layer_norm.weight"] = 1 + rand(CONV, scale=0.1)
    state["layer_norm.bias"] = rand(CONV, scale=0.1)
    state["post_extract_proj.weight"] = rand(HIDDEN, CONV)
    state["post_extract_proj.bias"] = rand(HIDDEN)
    state["mask_emb"] = rand(HIDDEN)
    state["encoder.pos_conv.0.weight_g"] = 1 + rand(1, 1, POS_KERNEL, scale=0.1)
    state["encoder.pos_conv.0.weight_v"] = rand(HIDDEN, HIDDEN // POS_GROUPS, POS_KERNEL)
    state["encoder.pos_conv.0.bias"] = rand(HIDDEN)
    state["encoder.layer_norm.weight"] = 1 + rand(HIDDEN, scale=0.1)
    state["encoder.layer_norm.bias"] = rand(HIDDEN, scale=0.1)
    for layer in range(LAYERS):
        p = f"encoder.layers.{layer}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            state[p + f"self_attn.{proj}.weight"] = rand(HIDDEN, HIDDEN)
            state[p + f"self_attn.{proj}.bias"] = rand(HIDDEN)
        for norm in ("self_attn_layer_norm", "final_layer_norm"):
            state[p + f"{norm}.weight"] = 1 + rand(HIDDEN, scale=0.1)
            state[p + f"{norm}.bias"] = rand(HIDDEN, scale=0.1)
        state[p + "fc1.weight"] = rand(FFN, HIDDEN)
        state[p + "fc1.bias"] = rand(FFN)
        state[p + "fc2.weight"] = rand(HIDDEN, FFN)
        state[p + "fc2.bias"] = rand(HIDDEN)
    return state


def tiny_ecapa(seed: int, channels=(16, 16, 16, 16, 48), attention: int = 8) -> dict[str, torch.Tensor]:
    from vpeval_torch.ecapa import ecapa_tdnn

    torch.manual_seed(seed)
    network = ecapa_tdnn(80, list(channels), attention, SPEAKER_DIM)
    return {k: v.clone() for k, v in network.state_dict().items()}


def tiny_generator_state(seed: int, config: dict | None = None) -> dict[str, torch.Tensor]:
    from vpeval_sslsas.generator import Generator, GeneratorConfig

    torch.manual_seed(seed)
    generator = Generator(GeneratorConfig.from_json(config or TINY_CONFIG))
    with torch.no_grad():  # weights large enough for an audible random output
        for name, p in generator.named_parameters():
            if name.endswith("weight_g"):
                p.fill_(1.0)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.05)
    return {k: v.clone() for k, v in generator.state_dict().items()}


def write_release(
    root: Path,
    seed: int = 0,
    content_in_generator: bool = True,
    config: dict | None = None,
    hubert_shape: dict | None = None,
    units: int = UNITS,
    ecapa: tuple = ((16, 16, 16, 16, 48), 8),
) -> Path:
    """Write a random-weight release under `root` (tiny unless told) and return it."""
    g = torch.Generator().manual_seed(seed)
    hubert_shape = hubert_shape or TINY_HUBERT
    hubert = fairseq_hubert(g, hubert_shape)
    W = torch.randn(units, hubert_shape["hidden"], generator=g)
    ecapa = tiny_ecapa(seed, *ecapa)
    hifigan = root / "HiFi-GAN" / MODEL_TYPE
    hifigan.mkdir(parents=True)
    (root / "HuBERT_soft").mkdir()
    (root / "ECAPA-TDNN").mkdir()
    (hifigan / "config.json").write_text(json.dumps(config or TINY_CONFIG, indent=4))
    state = dict(tiny_generator_state(seed, config))
    if content_in_generator:
        state.update({f"latent_encoder.ssl_model.{k}": v for k, v in hubert.items()})
        state["latent_encoder.W"] = W
    state.update({f"xv_model.{k}": v for k, v in ecapa.items()})
    torch.save({"generator": state}, hifigan / "g_00000001")
    torch.save({**{f"ssl_model.{k}": v for k, v in hubert.items()}, "W": W}, root / "HuBERT_soft" / "soft_model.pt")
    torch.save(ecapa, root / "ECAPA-TDNN" / "embedding_model.ckpt")
    return root


@cache
def shared() -> tuple[str, dict]:
    """(release folder, pool spec) written once per session, for class-level contract params."""
    folder = Path(tempfile.mkdtemp(prefix="vpeval-sslsas-"))
    release = str(write_release(folder / "pretrained_models_anon_xv"))
    return release, {"use": "manifest", "params": {"path": write_pool_manifest(folder, seconds=1.0)}}


def speech(seconds: float, seed: int = 0, rate: int = 16000) -> np.ndarray:
    """A noisy pulse-train vowel (130 Hz), peak 0.3."""
    from scipy.signal import lfilter

    rng = np.random.default_rng(seed)
    n = int(seconds * rate)
    pulses = np.zeros(n)
    pulses[:: rate // 130] = 1.0
    vowel = lfilter([1.0], [1.0, -1.7 * np.cos(2 * np.pi * 600 / rate), 0.8], pulses)
    return (0.3 * vowel / np.abs(vowel).max() + 0.01 * rng.normal(size=n)).astype(np.float32)
