"""Tiny random-weight models written the way the published folder holds them (for tests and examples).

configs/: the repository's hydra_arcs YAML files with small numbers (same _target_ names and fields).
checkpoints: the published forms: the conversion model as a plain state dict; the content encoder inside
{'net': ..., 'net_asr_head': ..., 'optimizer': ...} with accelerate's 'module.' prefixes and the training-
only head / post_module keys; the codec with torch's weight-norm parametrization keys on the HiFi-GAN head
(parametrizations.weight.original0 / original1), as torch.nn.utils.parametrizations.weight_norm saves them.
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml

SR = 16000

LM_YAML = {
    "_target_": "modules.arvc_wrapper.ARVCWrapper",
    "embedding": {"_target_": "torch.nn.Embedding", "num_embeddings": 16, "embedding_dim": 16},
    "context_dim": 4,
    "style_dim": 6,
    "model_dim": 16,
    "decoder": {
        "_target_": "modules.dual_ar_stream.DualARWrapper",
        "model": {
            "_target_": "modules.dual_ar_stream.DualARTransformer",
            "config": {
                "_target_": "modules.dual_ar_stream.DualARModelArgs",
                "attention_qkv_bias": False,
                "max_seq_len": 256,
                "n_layer": 1,
                "n_head": 2,
                "dim": 16,
                "intermediate_size": 24,
                "n_local_heads": -1,
                "head_dim": 8,
                "rope_base": 10000,
                "norm_eps": 1e-5,
                "dropout": 0.1,
                "vocab_size": 16,
                "codebook_size": 12,
                "fast_attention_qkv_bias": False,
                "fast_dim": 16,
                "fast_head_dim": 8,
                "fast_intermediate_size": 24,
                "fast_n_head": 2,
                "fast_n_local_heads": -1,
                "n_fast_layer": 1,
                "num_codebooks": 2,
                "use_gradient_checkpointing": False,
                "tie_word_embeddings": False,
                "cond_input_dim": 16,
                "delay": [0, 1, 2, 3],
            },
        },
    },
}

SPEC = {
    "_target_": "modules.vqgan.spectrogram.LogMelSpectrogram",
    "sample_rate": SR,
    "n_mels": 8,
    "n_fft": 64,
    "hop_length": 16,
    "win_length": 64,
}
BACKBONE = {
    "_target_": "modules.vqgan.modules.firefly.ConvNeXtEncoder",
    "input_channels": 8,
    "depths": [1, 1],
    "dims": [8, 16],
    "drop_path_rate": 0.2,
    "kernel_size": 7,
}
WINDOWED = {
    "_target_": "modules.vqgan.windowed_transformer.WindowLimitedTransformer",
    "causal": True,
    "window_size": 4,
    "config": {
        "_target_": "modules.vqgan.windowed_transformer.ModelArgs",
        "block_size": 1024,
        "n_layer": 1,
        "n_head": 2,
        "dim": 16,
        "intermediate_size": 24,
        "n_local_heads": -1,
        "head_dim": 8,
        "rope_base": 10000,
        "dropout_rate": 0.1,
        "attn_dropout_rate": 0.1,
    },
}
CONTENT_YAML = {
    "_target_": "modules.vqgan.modules.firefly_encoder.FireflyArchitecture",
    "spec_transform": SPEC,
    "backbone": BACKBONE,
    "head": {**BACKBONE, "input_channels": 16, "dims": [20, 24], "gin_channels": 6},
    "quantizer": {
        "_target_": "modules.vqgan.modules.bsq_no_upsample.DownsampleBinarySphericalQuantize",
        "input_dim": 16,
        "n_groups": 1,
        "codebook_size": 16,
        "downsample_factor": [2],
        "post_module": WINDOWED,
        "pre_module": WINDOWED,
    },
}
CODEC_YAML = {
    "_target_": "modules.vqgan.modules.firefly.FireflyArchitecture",
    "spec_transform": SPEC,
    "backbone": BACKBONE,
    "head": {
        "_target_": "modules.vqgan.modules.firefly.HiFiGANGenerator",
        "hop_length": 16,
        "upsample_rates": [4, 4],
        "upsample_kernel_sizes": [8, 4],
        "resblock_kernel_sizes": [3],
        "resblock_dilation_sizes": [[1, 2, 3]],
        "num_mels": 16,
        "upsample_initial_channel": 16,
        "pre_conv_kernel_size": 3,
        "post_conv_kernel_size": 3,
    },
    "quantizer": {
        "_target_": "modules.vqgan.modules.fsq.DownsampleFiniteScalarQuantize",
        "input_dim": 16,
        "n_groups": 2,
        "n_codebooks": 1,
        "levels": [4, 3],
        "downsample_factor": [2],
    },
}

TIMBRE_YAML = {
    "_target_": "modules.bicodec_speaker_encoder.speaker_encoder.SpeakerEncoder",
    "mel_fn": {
        "_target_": "torchaudio.transforms.MelSpectrogram",
        "sample_rate": SR,
        "n_fft": 1024,
        "win_length": 640,
        "hop_length": 320,
        "f_min": 10.0,
        "f_max": None,
        "n_mels": 16,
        "power": 1.0,
        "norm": "slaney",
        "mel_scale": "slaney",
    },
    "input_dim": 16,
    "out_dim": 8,
    "latent_dim": 4,  # the conversion model's context_dim
    "token_num": 32,  # the published tokenize_wav hard-codes 32 latents in its mask
    "fsq_levels": [4, 4, 4],
    "fsq_num_quantizers": 1,
}

SAMPLES_PER_FRAME = 32  # hop 16 x downsampling 2


def write_configs(folder: Path) -> Path:
    for rel, tree in (
        ("vc/firefly_arvc_bsq_8192_delay0_8.yaml", LM_YAML),
        ("speech_tokenizers/causal-encoder-lfq-8192.yaml", CONTENT_YAML),
        ("vocoders/firefly_gan_vq.yaml", CODEC_YAML),
        ("sv/sparktts_speaker_encoder.yaml", TIMBRE_YAML),
    ):
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(tree))
    return folder


def randomise(module: torch.nn.Module, seed: int) -> None:
    """Random weights that keep signals alive through the tiny stacks: matrices ~ N(0, 1 / fan_in),
    embeddings ~ N(0, 1), norm scales near 1, biases and layer scales small."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            if p.dim() >= 2:
                fan_in = p[0].numel() if "embeddings" not in name and "embedding." not in name else 1
                p.copy_(noise / fan_in**0.5)
            elif name.endswith("gamma"):
                p.copy_(0.5 + 0.1 * noise)
            elif name.endswith("bias"):
                p.copy_(0.05 * noise)
            else:
                p.copy_(1.0 + 0.1 * noise)


def weight_normed(state: dict) -> dict:
    """The codec head's conv weights as weight-norm parametrizations (g over every dim but 0, then v)."""
    out = {}
    for key, value in state.items():
        if key.startswith("head.") and key.endswith(".conv.weight"):
            prefix = key[: -len("weight")]
            g = value.flatten(1).norm(dim=1).view(-1, *([1] * (value.dim() - 1)))
            out[prefix + "parametrizations.weight.original0"] = g
            out[prefix + "parametrizations.weight.original1"] = value * 2.0  # any positive scale of v
        else:
            out[key] = value
    return out


def write_checkpoints(folder: Path, configs: Path, seed: int = 0) -> Path:
    from vpeval_streamvoiceanon.codec import CodecConfig, FireflyCodec
    from vpeval_streamvoiceanon.content import ContentConfig, ContentEncoder
    from vpeval_streamvoiceanon.layout import (
        CODEC_CONFIG,
        CODEC_FILE,
        CONTENT_CONFIG,
        CONTENT_FILE,
        LM_CONFIG,
        LM_FILE,
        STYLE_FILE,
        TIMBRE_CONFIG,
        TIMBRE_FILE,
        read_config,
    )
    from vpeval_streamvoiceanon.lm import ARVC, LMConfig
    from vpeval_streamvoiceanon.timbre import TimbreConfig, TimbreEncoder

    folder.mkdir(parents=True, exist_ok=True)
    lm = ARVC(read_config(str(configs), LM_CONFIG, LMConfig()))
    randomise(lm, seed)
    torch.save(lm.state_dict(), folder / LM_FILE)

    content = ContentEncoder(read_config(str(configs), CONTENT_CONFIG, ContentConfig()))
    randomise(content, seed + 1)
    net = {"module." + k: v for k, v in content.state_dict().items()}
    net["module.head.norm.weight"] = torch.ones(24)  # training-only parts, set aside at load
    net["module.quantizer.post_module.norm.weight"] = torch.ones(16)
    torch.save({"net": net, "net_asr_head": {"w": torch.zeros(2)}, "optimizer": {}}, folder / CONTENT_FILE)

    codec = FireflyCodec(read_config(str(configs), CODEC_CONFIG, CodecConfig()))
    randomise(codec, seed + 2)
    torch.save(weight_normed(codec.state_dict()), folder / CODEC_FILE)

    timbre = TimbreEncoder(read_config(str(configs), TIMBRE_CONFIG, TimbreConfig()))
    randomise(timbre, seed + 3)
    g = torch.Generator().manual_seed(seed + 4)
    for name, buffer in timbre.named_buffers():  # BatchNorm statistics
        if name.endswith("running_mean"):
            buffer.copy_(0.1 * torch.randn(buffer.shape, generator=g))
        elif name.endswith("running_var"):
            buffer.copy_(0.5 + torch.rand(buffer.shape, generator=g))
    torch.save(timbre.state_dict(), folder / TIMBRE_FILE)

    # CAM++ is read by vpeval's campplus encoder (vpeval-3dspeaker), not by this plugin: a stand-in file
    # lets the folder pass the existence checks; tests replace the style vector.
    torch.save({"placeholder": torch.zeros(1)}, folder / STYLE_FILE)
    return folder
