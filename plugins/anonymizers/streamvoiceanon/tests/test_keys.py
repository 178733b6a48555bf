"""State-dict key names equal the published modules' (read from Plachtaa/StreamVoiceAnon's code), for the
tiny configurations of conftest.py. The lists are written out from the published classes' attribute
names, not derived from this plugin's modules."""

from __future__ import annotations

import torch

from vpeval_streamvoiceanon.layout import CODEC_FILE, CONTENT_FILE, LM_FILE


def block(prefix: str) -> list[str]:
    """A published ConvNeXtBlock (firefly.py): dwconv (FishConvNet.conv), norm, pwconv1, pwconv2, gamma."""
    return [
        f"{prefix}.dwconv.conv.weight",
        f"{prefix}.dwconv.conv.bias",
        f"{prefix}.norm.weight",
        f"{prefix}.norm.bias",
        f"{prefix}.pwconv1.weight",
        f"{prefix}.pwconv1.bias",
        f"{prefix}.pwconv2.weight",
        f"{prefix}.pwconv2.bias",
        f"{prefix}.gamma",
    ]


def backbone() -> list[str]:
    """ConvNeXtEncoder(depths [1, 1]): stem conv + LayerNorm, mid LayerNorm + Conv1d, stages, norm."""
    return [
        "backbone.downsample_layers.0.0.conv.weight",
        "backbone.downsample_layers.0.0.conv.bias",
        "backbone.downsample_layers.0.1.weight",
        "backbone.downsample_layers.0.1.bias",
        "backbone.downsample_layers.1.0.weight",
        "backbone.downsample_layers.1.0.bias",
        "backbone.downsample_layers.1.1.weight",
        "backbone.downsample_layers.1.1.bias",
        *block("backbone.stages.0.0"),
        *block("backbone.stages.1.0"),
        "backbone.norm.weight",
        "backbone.norm.bias",
    ]


def weight_normed(prefix: str) -> list[str]:
    """FishConvNet / FishTransConvNet after .weight_norm(): torch parametrization keys on .conv."""
    return [
        f"{prefix}.conv.bias",
        f"{prefix}.conv.parametrizations.weight.original0",
        f"{prefix}.conv.parametrizations.weight.original1",
    ]


PUBLISHED_LM_KEYS = [
    "embedding.weight",
    "context_in.weight",
    "context_in.bias",
    "style_in.weight",
    "style_in.bias",
    "decoder.wait4start_embedding.weight",
    "decoder.wait4end_embedding.weight",
    "decoder.model.embeddings.weight",
    "decoder.model.codebook_embeddings.weight",
    "decoder.model.layers.0.attention.wqkv.weight",
    "decoder.model.layers.0.attention.wo.weight",
    "decoder.model.layers.0.feed_forward.w1.weight",
    "decoder.model.layers.0.feed_forward.w3.weight",
    "decoder.model.layers.0.feed_forward.w2.weight",
    "decoder.model.layers.0.ffn_norm.weight",
    "decoder.model.layers.0.attention_norm.weight",
    "decoder.model.norm.weight",
    "decoder.model.output.weight",
    "decoder.model.fast_embeddings.weight",
    "decoder.model.fast_layers.0.attention.wqkv.weight",
    "decoder.model.fast_layers.0.attention.wo.weight",
    "decoder.model.fast_layers.0.feed_forward.w1.weight",
    "decoder.model.fast_layers.0.feed_forward.w3.weight",
    "decoder.model.fast_layers.0.feed_forward.w2.weight",
    "decoder.model.fast_layers.0.ffn_norm.weight",
    "decoder.model.fast_layers.0.attention_norm.weight",
    "decoder.model.fast_norm.weight",
    "decoder.model.fast_output.weight",
]

_WINDOW_LAYER = [
    "attention.wqkv.weight",
    "attention.wo.weight",
    "feed_forward.w1.weight",
    "feed_forward.w3.weight",
    "feed_forward.w2.weight",
    "ffn_norm.weight",
    "attention_norm.weight",
    "attention_layer_scale.gamma",
    "ffn_layer_scale.gamma",
]

# What FireflyArchitecture.encode of firefly_encoder.py reads (head / post_module are training parts).
PUBLISHED_CONTENT_KEYS = [
    *backbone(),
    "quantizer.downsample.0.0.conv.weight",
    "quantizer.downsample.0.0.conv.bias",
    *block("quantizer.downsample.0.1"),
    *[f"quantizer.pre_module.layers.0.{k}" for k in _WINDOW_LAYER],
    "quantizer.pre_module.norm.weight",
    "quantizer.pre_module.freqs_cis",  # persistent buffers of windowed_transformer.Transformer
    "quantizer.pre_module.causal_mask",
    "quantizer.residual_bsq.rvqs.0.project_in.weight",
    "quantizer.residual_bsq.rvqs.0.project_in.bias",
    "quantizer.residual_bsq.rvqs.0.project_out.weight",
    "quantizer.residual_bsq.rvqs.0.project_out.bias",
    "quantizer.residual_bsq.rvqs.0.mask",  # LFQ's persistent bit mask
]

PUBLISHED_CODEC_KEYS = [
    *backbone(),
    "quantizer.downsample.0.0.conv.weight",
    "quantizer.downsample.0.0.conv.bias",
    *block("quantizer.downsample.0.1"),
    "quantizer.upsample.0.0.conv.weight",
    "quantizer.upsample.0.0.conv.bias",
    *block("quantizer.upsample.0.1"),
    *[
        f"quantizer.residual_fsq.rvqs.{g}.{p}.{w}"
        for g in (0, 1)
        for p in ("project_in", "project_out")
        for w in ("weight", "bias")
    ],
    *weight_normed("head.conv_pre"),
    *weight_normed("head.ups.0"),
    *weight_normed("head.ups.1"),
    *[
        k
        for r in (0, 1)
        for convs in ("convs1", "convs2")
        for i in (0, 1, 2)
        for k in weight_normed(f"head.resblocks.{r}.blocks.0.{convs}.{i}")
    ],
    *weight_normed("head.conv_post"),
]


def saved_keys(path) -> set[str]:
    return set(torch.load(path, weights_only=True).keys())


def test_conversion_model_keys_are_the_published_ones(tiny):
    models, _ = tiny
    assert saved_keys(models / LM_FILE) == set(PUBLISHED_LM_KEYS)


def test_content_encoder_keys_are_the_published_ones(tiny):
    models, _ = tiny
    net = torch.load(models / CONTENT_FILE, weights_only=True)["net"]
    used = {k[len("module.") :] for k in net if not k.startswith(("module.head.", "module.quantizer.post_module."))}
    assert used == set(PUBLISHED_CONTENT_KEYS)


def test_codec_keys_are_the_published_weight_norm_ones(tiny):
    models, _ = tiny
    assert saved_keys(models / CODEC_FILE) == set(PUBLISHED_CODEC_KEYS)


def test_the_built_modules_have_exactly_those_parameters(pipeline):
    plain = {k.replace("conv.parametrizations.weight.original0", "conv.weight") for k in PUBLISHED_CODEC_KEYS}
    plain = {k for k in plain if "original1" not in k}
    assert set(pipeline.codec.state_dict()) == plain
    assert set(pipeline.lm.state_dict()) == set(PUBLISHED_LM_KEYS)
    assert set(pipeline.content.state_dict()) == set(PUBLISHED_CONTENT_KEYS)


def batchnorm(prefix: str) -> list[str]:
    return [f"{prefix}.{k}" for k in ("weight", "bias", "running_mean", "running_var", "num_batches_tracked")]


def conv_relu_bn(prefix: str) -> list[str]:
    """ecapa_tdnn.Conv1dReluBn: conv, bn."""
    return [f"{prefix}.conv.weight", f"{prefix}.conv.bias", *batchnorm(f"{prefix}.bn")]


def se_res2block(prefix: str) -> list[str]:
    """SE_Res2Block: se_res2block = Sequential(Conv1dReluBn, Res2Conv1dReluBn (scale 8: 7 convs / bns),
    Conv1dReluBn, SE_Connect(linear1, linear2))."""
    p = f"{prefix}.se_res2block"
    return [
        *conv_relu_bn(f"{p}.0"),
        *[k for i in range(7) for k in (f"{p}.1.convs.{i}.weight", f"{p}.1.convs.{i}.bias")],
        *[k for i in range(7) for k in batchnorm(f"{p}.1.bns.{i}")],
        *conv_relu_bn(f"{p}.2"),
        *[f"{p}.3.{lin}.{w}" for lin in ("linear1", "linear2") for w in ("weight", "bias")],
    ]


# bicodec_speaker_encoder.speaker_encoder.SpeakerEncoder with ECAPA_TDNN_GLOB_c512, PerceiverResampler
# (depth 2), ResidualFSQ (one quantizer; FSQ layers without projections), project, torchaudio mel_fn.
PUBLISHED_TIMBRE_KEYS = [
    *conv_relu_bn("speaker_encoder.layer1"),
    *se_res2block("speaker_encoder.layer2"),
    *se_res2block("speaker_encoder.layer3"),
    *se_res2block("speaker_encoder.layer4"),
    "speaker_encoder.conv.weight",
    "speaker_encoder.conv.bias",
    "speaker_encoder.pool.linear1.weight",
    "speaker_encoder.pool.linear1.bias",
    "speaker_encoder.pool.linear2.weight",
    "speaker_encoder.pool.linear2.bias",
    *batchnorm("speaker_encoder.bn"),
    "speaker_encoder.linear.weight",
    "speaker_encoder.linear.bias",
    "perceiver_sampler.proj_context.weight",
    "perceiver_sampler.proj_context.bias",
    "perceiver_sampler.latents",
    *[
        f"perceiver_sampler.layers.{i}.{k}"
        for i in (0, 1)
        for k in (
            "0.to_q.weight",
            "0.to_kv.weight",
            "0.to_out.weight",
            "1.0.weight",
            "1.0.bias",
            "1.2.weight",
            "1.2.bias",
        )
    ],
    "perceiver_sampler.norm.gamma",
    "quantizer.project_in.weight",
    "quantizer.project_in.bias",
    "quantizer.project_out.weight",
    "quantizer.project_out.bias",
    "project.weight",
    "project.bias",
    "mel_transformer.spectrogram.window",
    "mel_transformer.mel_scale.fb",
]


def test_timbre_encoder_keys_are_the_published_ones(tiny):
    from vpeval_streamvoiceanon.layout import TIMBRE_FILE

    models, _ = tiny
    assert saved_keys(models / TIMBRE_FILE) == set(PUBLISHED_TIMBRE_KEYS)
