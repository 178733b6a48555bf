"""The published model folder (Plachta/StreamVoiceAnon on the Hugging Face hub, downloaded as
pretrained_checkpoints/) and its optional architecture configs, read as data.

Checkpoints load with torch.load(weights_only=True) (vpeval.torchload); the YAML configs load with
yaml.safe_load, and each `_target_` is only compared with the class the published config names at that
place (never imported): a config naming anything else is refused.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from vpeval.errors import ConfigError, MissingModelError

# File names as configs/config_firefly_arvcasr_8192_delay0_8.yaml and evaluations/infer_arvc.py name them.
LM_FILE = "dual_ar_delay_0_8.pth"
CONTENT_FILE = "asr_s2s_bsq_8192_causal_down_whisper.pth"
CODEC_FILE = "firefly-gan-vq-fsq-8x1024-21hz-generator.pth"
STYLE_FILE = "campplus_cn_common.bin"
TIMBRE_FILE = "spark_speaker_encoder.pth"
MODEL_FILES = {
    LM_FILE: "the dual autoregressive conversion model",
    CONTENT_FILE: "the causal content encoder",
    CODEC_FILE: "the Fish-Speech firefly codec",
    STYLE_FILE: "the CAM++ style encoder",
    TIMBRE_FILE: "the Spark-TTS timbre encoder",
}

# Architecture configs inside config_dir, laid out like the repository's configs/hydra_arcs/.
LM_CONFIG = "vc/firefly_arvc_bsq_8192_delay0_8.yaml"
CONTENT_CONFIG = "speech_tokenizers/causal-encoder-lfq-8192.yaml"
CODEC_CONFIG = "vocoders/firefly_gan_vq.yaml"
TIMBRE_CONFIG = "sv/sparktts_speaker_encoder.yaml"
CONFIGS = (LM_CONFIG, CONTENT_CONFIG, CODEC_CONFIG, TIMBRE_CONFIG)


def missing_files(model_dir: str | None, config_dir: str | None) -> list[str]:
    """One sentence per missing folder or file (no loading)."""
    if not model_dir:
        return [
            "stream-voice-anon needs the published checkpoints: set model_dir to a local copy of the "
            "Hugging Face repository Plachta/StreamVoiceAnon (hf download Plachta/StreamVoiceAnon)."
        ]
    folder = Path(model_dir).expanduser()
    if not folder.is_dir():
        return [f"stream-voice-anon model_dir {model_dir} is not a folder; point it at the downloaded checkpoints."]
    out = [
        f"stream-voice-anon model_dir {model_dir} lacks {name} ({what}); copy it there from Plachta/StreamVoiceAnon."
        for name, what in MODEL_FILES.items()
        if not (folder / name).is_file()
    ]
    if config_dir:
        configs = Path(config_dir).expanduser()
        for rel in CONFIGS:
            if not (configs / rel).is_file():
                out.append(
                    f"stream-voice-anon config_dir {config_dir} lacks {rel}; give the repository's "
                    "configs/hydra_arcs folder or leave config_dir unset for the published architecture."
                )
    return out


# -- configs -----------------------------------------------------------------------------------------

_EXPECTED_TARGETS = {
    LM_CONFIG: {
        "": "modules.arvc_wrapper.ARVCWrapper",
        "embedding": "torch.nn.Embedding",
        "decoder": "modules.dual_ar_stream.DualARWrapper",
        "decoder.model": "modules.dual_ar_stream.DualARTransformer",
        "decoder.model.config": "modules.dual_ar_stream.DualARModelArgs",
    },
    CONTENT_CONFIG: {
        "": "modules.vqgan.modules.firefly_encoder.FireflyArchitecture",
        "spec_transform": "modules.vqgan.spectrogram.LogMelSpectrogram",
        "backbone": "modules.vqgan.modules.firefly.ConvNeXtEncoder",
        "quantizer": "modules.vqgan.modules.bsq_no_upsample.DownsampleBinarySphericalQuantize",
        "quantizer.pre_module": "modules.vqgan.windowed_transformer.WindowLimitedTransformer",
        "quantizer.pre_module.config": "modules.vqgan.windowed_transformer.ModelArgs",
    },
    CODEC_CONFIG: {
        "": "modules.vqgan.modules.firefly.FireflyArchitecture",
        "spec_transform": "modules.vqgan.spectrogram.LogMelSpectrogram",
        "backbone": "modules.vqgan.modules.firefly.ConvNeXtEncoder",
        "head": "modules.vqgan.modules.firefly.HiFiGANGenerator",
        "quantizer": "modules.vqgan.modules.fsq.DownsampleFiniteScalarQuantize",
    },
    TIMBRE_CONFIG: {
        "": "modules.bicodec_speaker_encoder.speaker_encoder.SpeakerEncoder",
        "mel_fn": "torchaudio.transforms.MelSpectrogram",
    },
}

# Our config field <- dotted path in the published YAML.
# The content encoder and the codec read the same spectrogram and ConvNeXt backbone fields.
_SPECTROGRAM_AND_BACKBONE = {
    "sample_rate": "spec_transform.sample_rate",
    "n_mels": "spec_transform.n_mels",
    "n_fft": "spec_transform.n_fft",
    "hop_length": "spec_transform.hop_length",
    "win_length": "spec_transform.win_length",
    "backbone_depths": "backbone.depths",
    "backbone_dims": "backbone.dims",
    "backbone_kernel": "backbone.kernel_size",
}
_FIELDS = {
    LM_CONFIG: {
        "content_vocab": "embedding.num_embeddings",
        "context_dim": "context_dim",
        "style_dim": "style_dim",
        "model_dim": "model_dim",
        "max_seq_len": "decoder.model.config.max_seq_len",
        "n_layer": "decoder.model.config.n_layer",
        "n_head": "decoder.model.config.n_head",
        "n_local_heads": "decoder.model.config.n_local_heads",
        "intermediate_size": "decoder.model.config.intermediate_size",
        "rope_base": "decoder.model.config.rope_base",
        "norm_eps": "decoder.model.config.norm_eps",
        "vocab_size": "decoder.model.config.vocab_size",
        "codebook_size": "decoder.model.config.codebook_size",
        "num_codebooks": "decoder.model.config.num_codebooks",
        "fast_dim": "decoder.model.config.fast_dim",
        "fast_n_head": "decoder.model.config.fast_n_head",
        "fast_n_local_heads": "decoder.model.config.fast_n_local_heads",
        "fast_intermediate_size": "decoder.model.config.fast_intermediate_size",
        "n_fast_layer": "decoder.model.config.n_fast_layer",
        "tie_word_embeddings": "decoder.model.config.tie_word_embeddings",
        "delay": "decoder.model.config.delay",
    },
    CONTENT_CONFIG: {
        **_SPECTROGRAM_AND_BACKBONE,
        "quantizer_input_dim": "quantizer.input_dim",
        "codebook_size": "quantizer.codebook_size",
        "downsample_factor": "quantizer.downsample_factor",
        "window_size": "quantizer.pre_module.window_size",
        "block_size": "quantizer.pre_module.config.block_size",
        "n_layer": "quantizer.pre_module.config.n_layer",
        "n_head": "quantizer.pre_module.config.n_head",
        "dim": "quantizer.pre_module.config.dim",
        "intermediate_size": "quantizer.pre_module.config.intermediate_size",
        "head_dim": "quantizer.pre_module.config.head_dim",
        "rope_base": "quantizer.pre_module.config.rope_base",
    },
    CODEC_CONFIG: {
        **_SPECTROGRAM_AND_BACKBONE,
        "upsample_rates": "head.upsample_rates",
        "upsample_kernel_sizes": "head.upsample_kernel_sizes",
        "resblock_kernel_sizes": "head.resblock_kernel_sizes",
        "resblock_dilation_sizes": "head.resblock_dilation_sizes",
        "head_num_mels": "head.num_mels",
        "upsample_initial_channel": "head.upsample_initial_channel",
        "pre_conv_kernel_size": "head.pre_conv_kernel_size",
        "post_conv_kernel_size": "head.post_conv_kernel_size",
        "quantizer_input_dim": "quantizer.input_dim",
        "n_groups": "quantizer.n_groups",
        "n_codebooks": "quantizer.n_codebooks",
        "levels": "quantizer.levels",
        "downsample_factor": "quantizer.downsample_factor",
    },
    TIMBRE_CONFIG: {
        "sample_rate": "mel_fn.sample_rate",
        "n_fft": "mel_fn.n_fft",
        "win_length": "mel_fn.win_length",
        "hop_length": "mel_fn.hop_length",
        "f_min": "mel_fn.f_min",
        "n_mels": "mel_fn.n_mels",
        "out_dim": "out_dim",
        "latent_dim": "latent_dim",
        "token_num": "token_num",
        "fsq_levels": "fsq_levels",
    },
}

_MISSING = object()


def _at(tree: dict, dotted: str) -> Any:
    node: Any = tree
    for part in dotted.split(".") if dotted else []:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def read_config(config_dir: str | None, rel: str, default):
    """`default` (a dataclass of the published values) updated from config_dir/rel where given."""
    if not config_dir:
        return default
    import yaml

    path = Path(config_dir).expanduser() / rel
    try:
        tree = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"stream-voice-anon cannot read {path}: {exc}") from None
    if not isinstance(tree, dict):
        raise ConfigError(f"stream-voice-anon config {path} is not a mapping.")
    for where, target in _EXPECTED_TARGETS[rel].items():
        found = _at(tree, where)
        named = found.get("_target_") if isinstance(found, dict) else None
        if named != target:
            raise ConfigError(
                f"stream-voice-anon config {path}: {where or 'the top level'} names _target_ {named!r}; this plugin "
                f"builds only the published {target} there."
            )
    changes = {}
    for name, dotted in _FIELDS[rel].items():
        value = _at(tree, dotted)
        if value is not _MISSING and value is not None:
            changes[name] = value
    if isinstance(changes.get("delay"), int):
        changes["delay"] = [changes["delay"]]
    try:
        return dataclasses.replace(default, **changes)
    except TypeError as exc:
        raise ConfigError(f"stream-voice-anon config {path}: {exc}") from None


# -- checkpoints -------------------------------------------------------------------------------------

_WEIGHT_NORM = re.compile(r"^(.*)\.(?:parametrizations\.weight\.original([01])|weight_([gv]))$")


def fold_weight_norm(state: dict) -> dict:
    """weight = g * v / |v| (norm over every dim but 0), for either torch weight-norm key style."""

    out, parts = {}, {}
    for key, value in state.items():
        m = _WEIGHT_NORM.match(key)
        if m is None:
            out[key] = value
            continue
        which = "g" if (m.group(2) == "0" or m.group(3) == "g") else "v"
        parts.setdefault(m.group(1), {})[which] = value
    for prefix, gv in parts.items():
        if set(gv) != {"g", "v"}:
            raise MissingModelError(f"weight-normalised {prefix} has only its {''.join(gv)} part.")
        v = gv["v"].float()
        norm = v.flatten(1).norm(dim=1).view(-1, *([1] * (v.dim() - 1)))
        out[prefix + ".weight"] = gv["g"].float() * v / norm
    return out


def read_state(path: Path, unwrap: str | None = None) -> dict:
    """The tensors of a published checkpoint: `unwrap` entry if present, 'module.' prefixes stripped."""
    from vpeval.torchload import load_weights_only

    state = load_weights_only(path)
    if unwrap and isinstance(state, dict) and isinstance(state.get(unwrap), dict):
        state = state[unwrap]
    if not isinstance(state, dict):
        raise MissingModelError(f"{path} holds no state dict.")
    return {(k[7:] if k.startswith("module.") else k): v for k, v in state.items()}


def load_into(module, state: dict, path: Path, ignore: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> None:
    """Load `state` into `module` with every parameter present and shaped as built; keys starting with
    `ignore` (parts inference does not build) are set aside, `optional` buffers may be absent."""
    own = module.state_dict()
    state = {k: v for k, v in state.items() if not k.startswith(ignore)}
    missing = [k for k in own if k not in state and not k.startswith(optional)]
    unexpected = [k for k in state if k not in own]
    if missing or unexpected:
        what = []
        if missing:
            what.append(f"{len(missing)} missing key(s) such as {missing[0]}")
        if unexpected:
            what.append(f"{len(unexpected)} unexpected key(s) such as {unexpected[0]}")
        raise MissingModelError(f"{path} does not match the published architecture: {' and '.join(what)}.")
    for key, value in state.items():
        if tuple(value.shape) != tuple(own[key].shape):
            raise MissingModelError(
                f"{path}: {key} has shape {list(value.shape)} where the configured architecture has "
                f"{list(own[key].shape)}; give the matching config_dir."
            )
    module.load_state_dict(state, strict=False)
