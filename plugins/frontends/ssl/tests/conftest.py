"""Shared fixtures: UniLM's WavLM as packaged in s3prl, tiny UniLM checkpoints, test audio, the one-sentence check."""

import importlib

import numpy as np
import pytest


@pytest.fixture(scope="session")
def unilm():
    """UniLM's WavLM.py as s3prl packages it (s3prl/upstream/wavlm/WavLM.py, the same code as the VPC 2026
    toolkit's copy); only its module is imported, not s3prl's upstream hub."""
    return importlib.import_module("s3prl.upstream.wavlm.WavLM")


def unilm_cfg(layer_norm_first: bool, **overrides) -> dict:
    """A tiny UniLM cfg: WavLM-Large's shape (layer_norm_first, layer-norm CNN, normalize) or Base's."""
    cfg = {
        "extractor_mode": "layer_norm" if layer_norm_first else "default",
        "encoder_layers": 3,
        "encoder_embed_dim": 32,
        "encoder_ffn_embed_dim": 64,
        "encoder_attention_heads": 4,
        "layer_norm_first": layer_norm_first,
        "conv_feature_layers": "[(16,10,5)] + [(16,3,2)] * 4 + [(16,2,2)] * 2",
        "conv_bias": layer_norm_first,
        "normalize": layer_norm_first,
        "conv_pos": 8,
        "conv_pos_groups": 4,
        "relative_position_embedding": True,
        "num_buckets": 32,
        "max_distance": 64,
        "gru_rel_pos": True,
    }
    return {**cfg, **overrides}


@pytest.fixture(scope="session")
def unilm_checkpoint(unilm, tmp_path_factory):
    """make(layer_norm_first, **cfg) -> (path of a {"cfg", "model"} checkpoint, the reference model in eval mode)."""
    import torch

    made = {}

    def make(layer_norm_first: bool, **overrides):
        key = (layer_norm_first, tuple(sorted(overrides.items())))
        if key not in made:
            torch.manual_seed(1)
            cfg = unilm.WavLMConfig(unilm_cfg(layer_norm_first, **overrides))
            model = unilm.WavLM(cfg).eval()
            with torch.no_grad():  # norms, biases and gates away from their initial values, so each one matters
                for name, param in model.named_parameters():
                    if "norm" in name or name.endswith("bias") or "grep_a" in name:
                        param.add_(0.1 * torch.randn_like(param))
            path = tmp_path_factory.mktemp("unilm") / "WavLM-tiny.pt"
            torch.save({"cfg": dict(cfg.__dict__), "model": model.state_dict()}, path)
            made[key] = (path, model)
        return made[key]

    return make


@pytest.fixture(scope="session")
def speech():
    """Harmonic 'speech' waveforms of different lengths at 16 kHz (the shortest under one CNN stride chain)."""
    from vpeval.testing.dummies import speaker_voice, synthesize

    rng = np.random.default_rng(0)
    return [synthesize(speaker_voice(i), seconds, 16000, rng) for i, seconds in enumerate((1.3, 0.42, 2.05, 0.9))]


@pytest.fixture(scope="session")
def one_sentence():
    """A user error message is one sentence: one line, one final full stop."""
    return lambda message: "\n" not in message and message.endswith(".") and ". " not in message
