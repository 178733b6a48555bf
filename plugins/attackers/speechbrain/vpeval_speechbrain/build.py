"""A SpeechBrain speaker-embedding folder turned into speechbrain's own modules, from an allow-list.

What EncoderClassifier.from_hparams builds by running the YAML, built here from the YAML's values: the
classes below only (speechbrain's Fbank, InputNormalization, ECAPA_TDNN, Xvector and their classifiers),
each with the keyword arguments its constructor declares, plain values only (an `activation` may name
one of a few torch activations). Weights come from the file the Pretrainer's `paths:` entry names for each
module, else `<key>.ckpt` in the folder (as SpeechBrain's Pretrainer finds them), through
torch.load(weights_only=True).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from vpeval.errors import MissingModelError
from vpeval.torchload import load_weights_only
from vpeval_speechbrain.hparams import PLAIN, HyperParams, Tagged
from vpeval_speechbrain.pretrainer import READ_MODULES, REQUIRED_WEIGHTS, checkpoint_path, pretrainer_paths

HPARAMS = "hyperparams.yaml"
SAMPLE_RATE = 16000

# The modules EncoderClassifier.encode_batch runs, and the classes each may be.
FEATURES = ("speechbrain.lobes.features.Fbank",)
NORMALISATION = ("speechbrain.processing.features.InputNormalization",)
EMBEDDING_MODELS = {
    "speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN": "ecapa",
    "speechbrain.lobes.models.Xvector.Xvector": "xvector",
}
CLASSIFIERS = ("speechbrain.lobes.models.ECAPA_TDNN.Classifier", "speechbrain.lobes.models.Xvector.Classifier")
ALLOWED = {
    "compute_features": FEATURES,
    "mean_var_norm": NORMALISATION,
    "embedding_model": tuple(EMBEDDING_MODELS),
    "mean_var_norm_emb": NORMALISATION,
    "classifier": CLASSIFIERS,
}
REQUIRED = ("compute_features", "mean_var_norm", "embedding_model")
ACTIVATIONS = ("torch.nn.LeakyReLU", "torch.nn.ReLU", "torch.nn.PReLU", "torch.nn.ELU", "torch.nn.Tanh")
IGNORED_ARGUMENTS = ("device",)  # the run's device decides where modules go
# A typo must not allocate terabytes before the weights fail to load: sizes beyond these are refused.
MAX_SIZE = 16384
MAX_RATE = 384000
RATE_ARGUMENTS = ("sample_rate", "f_min", "f_max", "n_fft", "win_length", "hop_length")


def _class(dotted: str) -> type:
    from importlib import import_module

    module, name = dotted.rsplit(".", 1)
    return getattr(import_module(module), name)  # only ever a name from the allow-lists above


@dataclass
class SpeechBrainModel:
    """The built modules of one folder (eval mode, CPU until moved) and what they are."""

    folder: Path
    architecture: str  # "ecapa" or "xvector"
    compute_features: torch.nn.Module
    mean_var_norm: torch.nn.Module
    embedding_model: torch.nn.Module
    mean_var_norm_emb: torch.nn.Module | None
    classifier: torch.nn.Module | None
    arguments: dict[str, dict[str, Any]]  # the constructor arguments each module was built with
    files: list[Path]  # the files embeddings read: hyperparams.yaml, then the checkpoints found (READ_FILES order)

    @property
    def dim(self) -> int:
        args = self.arguments["embedding_model"]
        return int(args.get("lin_neurons", 192 if self.architecture == "ecapa" else 512))

    @property
    def n_mels(self) -> int:
        return int(self.arguments["compute_features"].get("n_mels", 40))

    def modules(self) -> dict[str, torch.nn.Module]:
        names = ("compute_features", "mean_var_norm", "embedding_model", "mean_var_norm_emb", "classifier")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}

    def to(self, device: str) -> SpeechBrainModel:
        for name, module in self.modules().items():
            setattr(self, name, module.to(device))  # InputNormalization.to moves its statistics too
        return self


READ_FILES = (HPARAMS, "embedding_model.ckpt", "mean_var_norm.ckpt", "mean_var_norm_emb.ckpt")  # what embeddings use


def load_folder(
    folder: str | Path, field: str = "source", with_classifier: bool = False, own_checkpoints: bool = False
) -> SpeechBrainModel:
    """Build and load the speaker-embedding modules of a SpeechBrain folder (see the module docstring).

    The classifier (classifier.ckpt) only on request: embeddings never need it, and a released folder's
    training leftovers must not stop them. `own_checkpoints`: read `<key>.ckpt` in the folder whatever the
    `paths:` entry says (a folder vpeval trained keeps the source's hyperparams.yaml, whose paths name the
    source's weights, beside its own)."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise MissingModelError(
            f"{field} points to {folder}, which is not a folder; give a SpeechBrain model folder "
            f"(with {HPARAMS} and embedding_model.ckpt), such as VoicePrivacy's exp/asv_orig."
        )
    hparams = HyperParams.read(folder / HPARAMS)
    for key in REQUIRED:
        if key not in hparams.values:
            raise MissingModelError(
                f"{hparams.path} has no `{key}`; a speaker-embedding folder defines compute_features, "
                "mean_var_norm and embedding_model (as EncoderClassifier expects)."
            )
    built: dict[str, torch.nn.Module] = {}
    arguments: dict[str, dict[str, Any]] = {}
    for key in ALLOWED:
        if key not in hparams.values or (key == "classifier" and not with_classifier):
            continue
        built[key], arguments[key] = _build(hparams, key)
    tag = hparams.values["embedding_model"]
    architecture = EMBEDDING_MODELS[tag.target]
    _check_rate(hparams, arguments["compute_features"])
    paths = {} if own_checkpoints else pretrainer_paths(hparams)
    checkpoint = {key: checkpoint_path(folder, key, paths, key in REQUIRED_WEIGHTS) for key in (*READ_MODULES, *built)}
    _load_state(built["embedding_model"], checkpoint["embedding_model"], required=True)
    if "classifier" in built:
        _load_state(built["classifier"], checkpoint["classifier"], required=True)
    for key in ("mean_var_norm", "mean_var_norm_emb"):
        if key in built:
            _load_statistics(built[key], checkpoint[key], hparams, key)
    read = [hparams.path] + [checkpoint[key] for key in READ_MODULES]
    for module in built.values():
        module.eval()
    return SpeechBrainModel(
        folder,
        architecture,
        built["compute_features"],
        built["mean_var_norm"],
        built["embedding_model"],
        built.get("mean_var_norm_emb"),
        built.get("classifier"),
        arguments,
        [path for path in read if path.is_file()],
    )


def _build(hparams: HyperParams, key: str) -> tuple[torch.nn.Module, dict[str, Any]]:
    node = hparams.values[key]
    allowed = ALLOWED[key]
    if not isinstance(node, Tagged) or node.kind != "new" or node.target not in allowed:
        what = f"!{node.tag}" if isinstance(node, Tagged) else type(node).__name__
        raise MissingModelError(
            f"{hparams.where(key)}: `{key}` is {what}, which vpeval does not build; supported: "
            + ", ".join(f"!new:{name}" for name in allowed)
            + "."
        )
    raw = node.value if node.value is not None else {}
    if isinstance(raw, list) and not raw:
        raw = {}
    if not isinstance(raw, dict):
        raise MissingModelError(
            f"{hparams.where(key, node.line)}: `{key}` gives positional arguments; write them as keyword arguments."
        )
    cls = _class(node.target)
    declared = [
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    ]
    kwargs: dict[str, Any] = {}
    for name, value in raw.items():
        line = node.key_lines.get(name, node.line)
        where = hparams.where(key, line)
        if name not in declared:
            raise MissingModelError(
                f"{where}: {node.target.rsplit('.', 1)[1]} has no argument `{name}`; supported: {', '.join(declared)}."
            )
        if name in IGNORED_ARGUMENTS:
            continue
        kwargs[name] = _argument(hparams, key, name, hparams.resolve(value, where), where)
    try:
        module = cls(**kwargs)
    except (TypeError, ValueError, AssertionError, RuntimeError) as exc:
        raise MissingModelError(
            f"{hparams.where(key, node.line)}: {node.target} cannot be built from these values ({_first(exc)})."
        ) from None
    return module, kwargs


def _argument(hparams: HyperParams, key: str, name: str, value: Any, where: str) -> Any:
    if isinstance(value, Tagged):
        if name == "activation" and value.kind == "name" and value.target in ACTIVATIONS and not value.value:
            return _class(value.target)
        raise MissingModelError(
            f"{where}: `{key}.{name}` is !{value.tag}, which vpeval never runs; give a plain value"
            + (f" or one of !name:{', !name:'.join(ACTIVATIONS)}." if name == "activation" else ".")
        )
    if not _plain_tree(value):
        raise MissingModelError(f"{where}: `{key}.{name}` holds a tag inside; give plain values only.")
    limit = MAX_RATE if name in RATE_ARGUMENTS else MAX_SIZE
    if any(isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) > limit for v in _leaves(value)):
        raise MissingModelError(f"{where}: `{key}.{name}` = {value} is beyond {limit}; check the value.")
    return value


def _plain_tree(value: Any) -> bool:
    if isinstance(value, list):
        return all(_plain_tree(v) for v in value)
    if isinstance(value, dict):
        return all(_plain_tree(v) for v in value.values())
    return isinstance(value, PLAIN)


def _leaves(value: Any):
    if isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def _check_rate(hparams: HyperParams, features: dict[str, Any]) -> None:
    rate = features.get("sample_rate", SAMPLE_RATE)
    if rate != SAMPLE_RATE:
        raise MissingModelError(
            f"{hparams.where('compute_features')}: the features are computed at {rate} Hz; vpeval's speechbrain "
            f"plugins read {SAMPLE_RATE} Hz models (VoicePrivacy's are)."
        )


def _load_state(module: torch.nn.Module, path: Path, required: bool) -> None:
    if not path.is_file():
        if required:
            raise MissingModelError(f"{path} is missing; the folder's {path.stem} needs its weights there.")
        return
    state = load_weights_only(path)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if isinstance(state, dict):
        state = {k.removeprefix("module."): v for k, v in state.items()}  # saved from DataParallel
    try:
        module.load_state_dict(state, strict=True)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise MissingModelError(
            f"{path} does not hold the weights of the {path.stem} that {HPARAMS} describes ({_first(exc)}); "
            "check that the folder's files belong together."
        ) from None


def _load_statistics(module: torch.nn.Module, path: Path, hparams: HyperParams, key: str) -> None:
    """InputNormalization's statistics file (count, glob_mean, glob_std), as its own _load reads it."""
    if not path.is_file():
        if getattr(module, "norm_type", "sentence") == "global" and key == "mean_var_norm":
            raise MissingModelError(
                f"{hparams.where(key)}: `{key}` normalises with global statistics, but {path} is missing."
            )
        return
    stats = load_weights_only(path)
    try:
        module._load_statistics_dict(stats)
    except (KeyError, TypeError) as exc:
        raise MissingModelError(
            f"{path} is not InputNormalization statistics (no {exc}); give the file SpeechBrain saved."
        ) from None


def _first(exc: BaseException) -> str:
    """The exception's first two lines (torch's load_state_dict says which keys or sizes on the second)."""
    lines = [line.strip().rstrip(".:") for line in str(exc).strip().splitlines() if line.strip()]
    return (": ".join(lines[:2]) if lines else type(exc).__name__)[:300]
