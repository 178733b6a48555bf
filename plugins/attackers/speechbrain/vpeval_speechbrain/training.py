"""Training the folder's network by VoicePrivacy's semi-informed recipe, through vpeval's own trainer.

The network, crops, AAM loss, Adam and cyclic learning rate of VPC's train_ecapa_tdnn_small.yaml are
what vpeval's `ecapa` attacker trains (and the x-vector recipe its `xvector` attacker), so this reaches
that attacker through `context.get` with the folder's sizes and the recipe's numbers, instead of a second
training loop. Fine-tuning (VPC 2026) hands it the folder's weights as its `init_from` folder (its
config.json + embedding_model.pt layout). The trained weights come back as a SpeechBrain folder:
the source's hyperparams.yaml (less a Pretrainer `paths:` entry, which names the source's weights) and the
new embedding_model.ckpt, which EncoderClassifier also reads.
"""

from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import torch

from vpeval.device import cpu_state_dict
from vpeval.errors import ConfigError
from vpeval.torchload import load_weights_only
from vpeval.types import TrainingData
from vpeval_speechbrain.build import HPARAMS, SpeechBrainModel, load_folder
from vpeval_speechbrain.hparams import HyperParams
from vpeval_speechbrain.params import RECIPES, SpeechBrainTrainParams
from vpeval_speechbrain.paths import model_folder
from vpeval_speechbrain.pretrainer import text_without_paths

WEIGHTS = "embedding_model.ckpt"
HISTORY = "training_history.json"
# The architectures vpeval's trainer builds (VPC's recipes): anything else in a folder cannot be trained here.
TRAINABLE = {
    "ecapa": {
        "kernel_sizes": [5, 3, 3, 3, 1],
        "dilations": [1, 2, 3, 4, 1],
        "attention_channels": 128,
        "res2net_scale": 8,
        "se_channels": 128,
        "global_context": True,
        "groups": [1, 1, 1, 1, 1],
        "dropout": 0.0,
        "activation": torch.nn.ReLU,
    },
    "xvector": {
        "tdnn_blocks": 5,
        "tdnn_kernel_sizes": [5, 3, 3, 1, 1],
        "tdnn_dilations": [1, 2, 3, 1, 1],
        "activation": torch.nn.LeakyReLU,
    },
}
FEATURE_DEFAULTS = {"left_frames": 0, "right_frames": 0, "deltas": False, "context": False}


def train_folder(params: SpeechBrainTrainParams, context, data: TrainingData, out: Path, name: str) -> Path:
    """Train by the recipe, write the result as a SpeechBrain folder `out`, return it."""
    source = load_folder(model_folder(params.source), f"{name}.source")
    trainer, trainer_params = _trainer_params(source, params, name)
    if params.recipe_value("start") == "source":
        trainer_params["init_from"] = str(_start_folder(source, context.folder("start")))
    context.log.info("%s: training %s by recipe %s (%s)", name, trainer, params.recipe, trainer_params)
    network = context.get("attacker", trainer, trainer_params)
    network.train(data)
    saved = context.folder("trainer-saved")
    network.save(saved)
    state = load_weights_only(saved / "embedding_model.pt")
    out.mkdir(parents=True, exist_ok=True)
    # the architecture: the source's, as data, less any `paths:` entry naming the source's weights
    stripped = text_without_paths(HyperParams.read(source.folder / HPARAMS))
    if stripped is None:
        shutil.copyfile(source.folder / HPARAMS, out / HPARAMS)
    else:
        (out / HPARAMS).write_bytes(stripped.encode("utf-8", "surrogateescape"))
    torch.save(cpu_state_dict(state), out / WEIGHTS)
    if (saved / "history.json").is_file():
        shutil.copyfile(saved / "history.json", out / HISTORY)
    load_folder(out, f"{name} trained model", own_checkpoints=True)  # loads back (fails here, not later)
    return out


def copy_model_folder(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    from vpeval_speechbrain.ssl import LAYOUT_MARKER

    for name in (HPARAMS, WEIGHTS, HISTORY, LAYOUT_MARKER):
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)


def _trainer_params(model: SpeechBrainModel, params: SpeechBrainTrainParams, name: str) -> tuple[str, dict]:
    args = _effective(model.embedding_model, model.arguments["embedding_model"])
    mismatch = {k: args.get(k) for k, v in TRAINABLE[model.architecture].items() if args.get(k) != v}
    features = model.arguments["compute_features"]
    odd_features = {k: v for k, v in features.items() if k != "n_mels" and FEATURE_DEFAULTS.get(k, object()) != v}
    norm = model.arguments["mean_var_norm"]
    if mismatch or odd_features or norm.get("norm_type", "global") != "sentence" or norm.get("std_norm", True):
        raise ConfigError(
            f"{name}: the network of {model.folder} differs from VoicePrivacy's recipe "
            f"({_describe(mismatch, odd_features, norm)}), and vpeval trains the recipe's ECAPA-TDNN / x-vector "
            "with sentence mean normalised Fbank features only; use the `speechbrain` attacker (no training)."
        )
    channels = list(args["channels"] if model.architecture == "ecapa" else args["tdnn_channels"])
    common: dict[str, Any] = {
        "n_mels": model.n_mels,
        "channels": channels,
        "embedding_dim": model.dim,
        "epochs": params.recipe_value("epochs"),
        "batch_size": params.recipe_value("batch_size"),
        "crop_seconds": params.crop_seconds,
        "patience": params.patience,
        "validation_share": params.validation_share,
        "max_grad_norm": params.max_grad_norm,
        "keep_epoch": params.keep_epoch,
        "drop_short": params.drop_short,
    }
    if model.architecture == "ecapa":
        recipe = {
            "loss": "aam",
            "margin": params.margin,
            "scale": params.scale,
            "lr": params.recipe_value("lr"),
            "optimizer": RECIPES[params.recipe]["optimizer"],
            "lr_schedule": "cyclic",
            "base_lr": 1e-8,
            "cyclic_step_size": params.cyclic_step_size,
        }
        return "ecapa", {**common, **recipe}
    # VPC's x-vector recipe (softmax, linear lr) is the xvector attacker's default; only an explicit lr passes.
    return "xvector", {**common, **({"lr": params.lr} if params.lr is not None else {})}


def _effective(module: torch.nn.Module, given: dict[str, Any]) -> dict[str, Any]:
    """The constructor's defaults with the folder's values over them (what the network was built with)."""
    signature = inspect.signature(type(module).__init__)
    defaults = {k: p.default for k, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}
    return {**defaults, **given}


def _start_folder(model: SpeechBrainModel, folder: Path) -> Path:
    """The folder's embedding weights in the trainer's init_from layout (config.json + embedding_model.pt)."""
    config = {
        "architecture": model.architecture,
        "n_mels": model.n_mels,
        "channels": list(
            _effective(model.embedding_model, model.arguments["embedding_model"])[
                "channels" if model.architecture == "ecapa" else "tdnn_channels"
            ]
        ),
        "embedding_dim": model.dim,
        "sample_rate": 16000,
    }
    torch.save(cpu_state_dict(model.embedding_model), folder / "embedding_model.pt")
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def _describe(mismatch: dict, features: dict, norm: dict) -> str:
    parts = [f"embedding_model {k}={_name(v)}" for k, v in mismatch.items()]
    parts += [f"compute_features {k}={v}" for k, v in features.items()]
    if norm.get("norm_type", "global") != "sentence" or norm.get("std_norm", True):
        parts.append(f"mean_var_norm {norm}")
    return ", ".join(parts)


def _name(value: Any) -> str:
    return value.__name__ if isinstance(value, type) else repr(value)
