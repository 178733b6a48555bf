"""UniLM's WavLM checkpoint in transformers' WavLMModel, against UniLM's WavLM.py (the VPC 2026 toolkit's copy of it).

The reference (UniLM's WavLM.py as s3prl packages it, the same code) runs the checkpoint as VPC 2026's
WavLMFeatureExtractor does: F.layer_norm of the waveform when cfg.normalize, then
extract_features(output_layer=L, ret_layer_results=True); the frontend must give every one of its
layer_results (0: the transformer's input, 1..L: each layer's output) within 1e-5.
"""

import pickle

import numpy as np
import pytest
import torch

from vpeval.errors import MissingModelError
from vpeval.plugins import plugin_context
from vpeval_ssl_frontends.frontend import WavLMFrontend
from vpeval_ssl_frontends.unilm import hf_name, parse_conv_layers, wavlm_config

TOLERANCE = 1e-5


def reference_layers(model, audio: np.ndarray) -> np.ndarray:
    """[L+1, T, D]: VPC 2026's extraction of one waveform, all of layer_results."""
    source = torch.from_numpy(audio.astype(np.float32))[None]
    if model.cfg.normalize:
        source = torch.nn.functional.layer_norm(source, source.shape)
    with torch.no_grad():
        (_, results), _ = model.extract_features(source, output_layer=model.cfg.encoder_layers, ret_layer_results=True)
    return torch.stack([x for x, _ in results]).transpose(1, 2)[:, 0].numpy()  # T x B x C -> [L+1, T, D]


def frontend(path, **params) -> WavLMFrontend:
    return WavLMFrontend(WavLMFrontend.Params(model=str(path), **params), plugin_context())


@pytest.mark.parametrize("layer_norm_first", [True, False], ids=["large-layer-norm-first", "base-post-norm"])
def test_every_layer_equals_the_vpc2026_reference(unilm_checkpoint, speech, layer_norm_first):
    path, reference = unilm_checkpoint(layer_norm_first)
    ssl = frontend(path, layers=[0, 1, 2, 3])
    for audio in speech:
        want = reference_layers(reference, audio)
        got = ssl.split_layers(ssl.encode(audio).features)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)


def test_all_is_vpc2026s_stack_and_the_final_norm_is_the_references_x(unilm_checkpoint, unilm, speech):
    """layers: all = layer_results[1:] (what VPC 2026 stacks); with final_layer_norm the last layer is the
    reference's returned x, which a layer-norm-first encoder puts through its final layer norm."""
    path, reference = unilm_checkpoint(True)
    audio = speech[0]
    want = reference_layers(reference, audio)
    stacked = frontend(path).encode(audio).features
    assert stacked.shape == (want.shape[1], 3 * 32)
    np.testing.assert_allclose(stacked.reshape(-1, 3, 32).transpose(1, 0, 2), want[1:], atol=TOLERANCE)
    source = torch.nn.functional.layer_norm(torch.from_numpy(audio)[None].float(), (len(audio),))
    with torch.no_grad():
        x, _ = reference.extract_features(source)  # output_layer None: the final layer norm applies
    normed = frontend(path, layers=[-1], final_layer_norm=True).encode(audio).features
    np.testing.assert_allclose(normed, x[0].numpy(), atol=TOLERANCE)
    assert np.abs(normed - want[-1]).max() > 1e-2  # the norm is a real difference, not a no-op


def test_normalize_follows_the_cfg(unilm_checkpoint, speech):
    """cfg.normalize true: UniLM's layer norm of the waveform; normalize: none switches it off."""
    path, _ = unilm_checkpoint(True)
    auto = frontend(path, layers=[1]).encode(speech[1]).features
    ln = frontend(path, layers=[1], normalize="layer-norm").encode(speech[1]).features
    raw = frontend(path, layers=[1], normalize="none").encode(speech[1]).features
    np.testing.assert_array_equal(auto, ln)
    assert np.abs(auto - raw).max() > 1e-3


def test_every_checkpoint_weight_lands_in_the_transformers_model(unilm_checkpoint):
    path, reference = unilm_checkpoint(False)
    model = frontend(path).loaded.model
    hf = model.state_dict()
    state = reference.state_dict()
    for name, tensor in state.items():
        target = hf_name(name, group_norm=True, weight_norm=WEIGHT_NORM_KEYS)
        torch.testing.assert_close(hf[target], tensor, rtol=0, atol=0)
    assert len({hf_name(n, True, WEIGHT_NORM_KEYS) for n in state}) == len(state)  # no two keys on one weight


WEIGHT_NORM_KEYS = {"weight_g": "parametrizations.weight.original0", "weight_v": "parametrizations.weight.original1"}


WAVLM_LARGE_CFG = {
    "extractor_mode": "layer_norm",
    "encoder_layers": 24,
    "encoder_embed_dim": 1024,
    "encoder_ffn_embed_dim": 4096,
    "encoder_attention_heads": 16,
    "activation_fn": "gelu",
    "layer_norm_first": True,
    "conv_feature_layers": "[(512,10,5)] + [(512,3,2)] * 4 + [(512,2,2)] * 2",
    "conv_bias": False,
    "normalize": True,
    "conv_pos": 128,
    "conv_pos_groups": 16,
    "relative_position_embedding": True,
    "num_buckets": 320,
    "max_distance": 800,
    "gru_rel_pos": True,
    "dropout": 0.1,
    "attention_dropout": 0.1,
    "activation_dropout": 0.0,
    "encoder_layerdrop": 0.0,
    "dropout_input": 0.0,
    "mask_prob": 0.65,
}


def test_wavlm_large_cfg_builds_transformers_wavlm_large_shape(tmp_path):
    """The cfg of the released WavLM-Large.pt (its published values) -> transformers' config."""
    config = wavlm_config(WAVLM_LARGE_CFG, tmp_path / "WavLM-Large.pt")
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (1024, 24, 4096)
    assert (config.num_attention_heads, config.feat_extract_norm, config.do_stable_layer_norm) == (16, "layer", True)
    assert list(config.conv_dim) == [512] * 7 and list(config.conv_kernel) == [10, 3, 3, 3, 3, 2, 2]
    assert list(config.conv_stride) == [5, 2, 2, 2, 2, 2, 2]
    assert (config.num_buckets, config.max_bucket_distance, config.num_conv_pos_embeddings) == (320, 800, 128)


def test_conv_layers_are_parsed_never_evaluated(tmp_path, one_sentence):
    assert parse_conv_layers("[(512,10,5)] + [(512,3,2)] * 4", tmp_path) == [(512, 10, 5)] + [(512, 3, 2)] * 4
    with pytest.raises(MissingModelError) as err:
        parse_conv_layers("__import__('os').system('touch pwned')", tmp_path / "x.pt")
    assert one_sentence(str(err.value)) and "conv_feature_layers" in str(err.value)
    assert not (tmp_path / "pwned").exists()


def test_an_unknown_key_is_one_sentence_naming_file_and_key(unilm_checkpoint, tmp_path, one_sentence):
    path, _ = unilm_checkpoint(True)
    checkpoint = torch.load(path, weights_only=True)
    checkpoint["model"]["quantizer.vars"] = torch.zeros(3)
    bad = tmp_path / "extra.pt"
    torch.save(checkpoint, bad)
    with pytest.raises(MissingModelError) as err:
        _ = frontend(bad).loaded
    message = str(err.value)
    assert one_sentence(message) and str(bad) in message and "quantizer.vars" in message


def test_a_missing_key_is_one_sentence_naming_file_and_key(unilm_checkpoint, tmp_path, one_sentence):
    path, _ = unilm_checkpoint(True)
    checkpoint = torch.load(path, weights_only=True)
    del checkpoint["model"]["encoder.layers.2.fc2.weight"]
    bad = tmp_path / "missing.pt"
    torch.save(checkpoint, bad)
    with pytest.raises(MissingModelError) as err:
        _ = frontend(bad).loaded
    message = str(err.value)
    assert one_sentence(message) and str(bad) in message and "encoder.layers.2.feed_forward.output_dense" in message


def test_a_wrong_shape_is_one_sentence(unilm_checkpoint, tmp_path, one_sentence):
    path, _ = unilm_checkpoint(True)
    checkpoint = torch.load(path, weights_only=True)
    checkpoint["cfg"]["encoder_ffn_embed_dim"] = 48
    bad = tmp_path / "shape.pt"
    torch.save(checkpoint, bad)
    with pytest.raises(MissingModelError) as err:
        _ = frontend(bad).loaded
    assert one_sentence(str(err.value)) and "fc1" in str(err.value)


class Payload:
    """Unpickling this would create a file: weights_only must refuse it before that happens."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickled_object_in_the_checkpoint_is_refused_and_never_run(unilm_checkpoint, tmp_path, one_sentence):
    path, _ = unilm_checkpoint(True)
    checkpoint = torch.load(path, weights_only=True)
    marker = tmp_path / "ran"
    checkpoint["cfg"] = Payload(marker)
    bad = tmp_path / "pickled.pt"
    torch.save(checkpoint, bad, pickle_module=pickle)
    with pytest.raises(MissingModelError) as err:
        _ = frontend(bad).loaded
    assert one_sentence(str(err.value)) and str(bad) in str(err.value) and "never unpickles" in str(err.value)
    assert not marker.exists()


def test_a_checkpoint_without_cfg_is_one_sentence(unilm_checkpoint, tmp_path, one_sentence):
    path, _ = unilm_checkpoint(True)
    bad = tmp_path / "state-only.pt"
    torch.save(torch.load(path, weights_only=True)["model"], bad)
    with pytest.raises(MissingModelError) as err:
        _ = frontend(bad).loaded
    assert one_sentence(str(err.value)) and str(bad) in str(err.value)


def test_no_projection_when_widths_match_is_the_identity(unilm_checkpoint, speech):
    """UniLM skips post_extract_proj when the CNN is as wide as the transformer; transformers always has one."""
    path, reference = unilm_checkpoint(True, conv_feature_layers="[(32,10,5)] + [(32,3,2)] * 4 + [(32,2,2)] * 2")
    assert reference.post_extract_proj is None
    got = frontend(path, layers=[0, 3]).encode(speech[0]).features
    want = reference_layers(reference, speech[0])[[0, 3]]
    np.testing.assert_allclose(got.reshape(-1, 2, 32).transpose(1, 0, 2), want, atol=TOLERANCE)


@pytest.mark.slow  # about 10 s on a busy core: two 1024-wide models built, saved and loaded
def test_wavlm_large_shape_equals_the_reference(unilm_checkpoint, speech):
    """WavLM-Large's exact cfg (1024 wide, 16 heads, 320 buckets up to 800 frames, 128-tap positional
    convolution in 16 groups, bias-free layer-norm CNN) with one of its 24 layers, random weights."""
    large = {k: v for k, v in WAVLM_LARGE_CFG.items() if k != "layer_norm_first"}
    path, reference = unilm_checkpoint(True, **{**large, "encoder_layers": 1})
    ssl = frontend(path, layers=[0, 1])
    audio = speech[0]
    want = reference_layers(reference, audio)
    got = ssl.split_layers(ssl.encode(audio).features)
    assert got.shape == (2, 64, 1024)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE)
