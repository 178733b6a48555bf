"""A local model: a transformers folder (config.json + weights), or for WavLM the UniLM WavLM-Large.pt.

vpeval never downloads: from_pretrained reads local files only. Loading returns the model and how its
input is normalised (the folder's preprocessor_config.json, or the UniLM cfg's `normalize`).
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpeval.errors import MissingModelError
from vpeval_ssl_frontends.folder_checks import lfs_problem, read_config, read_json, safetensors_problem

# frontend name -> (transformers class, config model_type, what the folder holds)
KINDS = {
    "wavlm": ("WavLMModel", "wavlm", "a transformers WavLM folder (config.json + model.safetensors) or WavLM-Large.pt"),
    "hubert": ("HubertModel", "hubert", "a transformers HuBERT folder (config.json + model.safetensors)"),
    "wav2vec2": ("Wav2Vec2Model", "wav2vec2", "a transformers wav2vec2 folder (config.json + model.safetensors)"),
}

SAFETENSORS = "model.safetensors"  # what transformers reads first
PICKLED = "pytorch_model.bin"  # older folders: a torch checkpoint, read weights-only


@dataclass
class Loaded:
    model: Any
    normalize: str  # "zero-mean-unit-var", "layer-norm" or "none"


def load(kind: str, model: str, normalize: str) -> Loaded:
    """The frozen model named by the `model` parameter; one sentence when it is missing or foreign."""
    class_name, model_type, needs = KINDS[kind]
    path = Path(model).expanduser()
    if kind == "wavlm" and path.is_file():
        from vpeval_ssl_frontends.unilm import load_unilm_wavlm

        net, cfg_normalize = load_unilm_wavlm(path)
        auto = "layer-norm" if cfg_normalize else "none"
        return Loaded(net, auto if normalize == "auto" else normalize)
    problem = path_problem(kind, model)
    if problem:
        raise MissingModelError(problem)
    found = read_config(path / "config.json").get("model_type")
    if found != model_type:
        raise MissingModelError(
            f"The {kind} frontend parameter model={model} holds a {found} model, not {model_type}; give {needs}."
        )
    import transformers
    from huggingface_hub.errors import StrictDataclassError

    from vpeval.torchload import load_weights_only

    try:
        net = getattr(transformers, class_name).from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError, StrictDataclassError) as exc:
        # a config whose values have the wrong types or miss keys: the folder's fault, said in its words
        reason = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else type(exc).__name__
        raise MissingModelError(f"The {kind} frontend could not read model={model} ({reason}); give {needs}.") from None
    except (pickle.UnpicklingError, EOFError, RuntimeError):
        pickled = path / PICKLED
        if (path / SAFETENSORS).is_file() or not pickled.is_file():
            raise
        load_weights_only(pickled)  # the core's sentence naming the file: not a weights-only checkpoint
        raise  # the file reads as weights: the failure was not the file's
    return Loaded(net, folder_normalize(path) if normalize == "auto" else normalize)


def path_problem(kind: str, model: str) -> str | None:
    """Why `model` cannot be this frontend's model, from what exists on disk (no loading), or None."""
    path = Path(model).expanduser()
    if kind == "wavlm" and path.is_file():
        return None
    if (path / "config.json").is_file():
        return folder_problem(path)
    needs = KINDS[kind][2]
    what = "does not exist" if not path.exists() else "is not a folder with config.json"
    return f"The {kind} frontend parameter model={model} {what}; give {needs}."


def folder_problem(folder: Path) -> str | None:
    """What is wrong with a transformers folder's config.json or weight files, read without building the
    network (a pickled pytorch_model.bin shows only when loaded), or None."""
    try:
        read_config(folder / "config.json")
    except MissingModelError as exc:
        return str(exc)
    pickled = folder / PICKLED
    return (lfs_problem(pickled) if pickled.is_file() else None) or safetensors_problem(folder)


def folder_normalize(folder: Path) -> str:
    """The folder's feature extractor setting (do_normalize; true when the folder has no preprocessor, the
    default of transformers' Wav2Vec2FeatureExtractor)."""
    config = folder / "preprocessor_config.json"
    do_normalize = read_json(config).get("do_normalize", True) if config.is_file() else True
    return "zero-mean-unit-var" if do_normalize else "none"
