"""A SpeechBrain inference folder (hyperparams.yaml + checkpoints) built as data, never executed.

HyperPyYAML runs a model folder's YAML while loading it (`!new:`, `!name:` and `!apply:` import and call
any Python name), so loading a downloaded folder with it runs whatever its author wrote. Here
vpeval-sbfolder's reader (YAML's safe loader, size and alias caps) reads the file, every tag stays an
inert `Tag` record, and `Graph` builds only what the
interface needs, from an allow-list of speechbrain / torch classes, resolving `!ref` to the same object
each time (a module shared by `asr_model` and `encoder` is one module, as HyperPyYAML makes it). The
Pretrainer's `loadables` name what each checkpoint fills; checkpoints load with weights_only=True.

Tags outside trusted packages anywhere in the file (`!apply:os.system`, `!new:subprocess.Popen`) refuse
the whole folder before anything is built; trusted tags the interface does not need are never built.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from importlib import import_module
from pathlib import Path
from typing import Any

from vpeval.errors import MissingModelError
from vpeval_sbfolder.checkpoints import checkpoint_file, load_checkpoint  # noqa: F401 (checkpoint_file: re-exported)
from vpeval_sbfolder.hparams import REF, HyperParams, Tagged, tags

TRUSTED_PACKAGES = ("speechbrain.", "torch.", "sentencepiece.")
# `!apply:` is a call at load time: none is ever run; a seed call is the one tolerated in the file.
TOLERATED_APPLY = ("speechbrain.utils.seed_everything", "speechbrain.utils.seed.seed_everything")
WAV2VEC2 = (
    "speechbrain.lobes.models.huggingface_transformers.wav2vec2.Wav2Vec2",
    "speechbrain.integrations.huggingface.wav2vec2.Wav2Vec2",
    "speechbrain.lobes.models.huggingface_wav2vec.HuggingFaceWav2Vec2",  # the name older folders use
)
# What `!new:` / `!name:` may build: speechbrain's and torch's own layers, with plain arguments.
BUILDABLE = (
    "speechbrain.nnet.containers.Sequential",
    "speechbrain.nnet.containers.LengthsCapableSequential",
    "speechbrain.nnet.linear.Linear",
    "speechbrain.nnet.normalization.BatchNorm1d",
    "speechbrain.nnet.normalization.LayerNorm",
    "speechbrain.nnet.activations.Softmax",
    "speechbrain.nnet.pooling.StatisticsPooling",
    "speechbrain.decoders.ctc_greedy_decode",
    "speechbrain.decoders.ctc.ctc_greedy_decode",
    "speechbrain.dataio.encoder.CategoricalEncoder",
    "sentencepiece.SentencePieceProcessor",
    "torch.nn.ModuleList",
    "torch.nn.LeakyReLU",
    "torch.nn.ReLU",
    "torch.nn.GELU",
    "torch.nn.Tanh",
    "torch.nn.Dropout",
    "torch.nn.Identity",
    *WAV2VEC2,
    # EncoderDecoderASR (speechbrain 1.x transformer + CTC/attention beam search + transformer LM)
    "speechbrain.lobes.features.Fbank",
    "speechbrain.processing.features.InputNormalization",
    "speechbrain.lobes.models.convolution.ConvolutionFrontEnd",
    "speechbrain.lobes.models.transformer.TransformerASR.TransformerASR",
    "speechbrain.lobes.models.transformer.TransformerASR.EncoderWrapper",
    "speechbrain.lobes.models.transformer.TransformerLM.TransformerLM",
    "speechbrain.decoders.S2STransformerBeamSearcher",
    "speechbrain.decoders.seq2seq.S2STransformerBeamSearcher",
    "speechbrain.decoders.S2STransformerGreedySearcher",
    "speechbrain.decoders.seq2seq.S2STransformerGreedySearcher",
    "speechbrain.decoders.scorer.ScorerBuilder",
    "speechbrain.decoders.ScorerBuilder",
    "speechbrain.decoders.scorer.CTCScorer",
    "speechbrain.decoders.CTCScorer",
    "speechbrain.decoders.scorer.TransformerLMScorer",
    "speechbrain.decoders.TransformerLMScorer",
)
PRETRAINER = "speechbrain.utils.parameter_transfer.Pretrainer"
# Names of speechbrain 0.5 that 1.x (installed) no longer has, with what replaces them.
LEGACY = {
    "speechbrain.decoders.S2STransformerBeamSearch": "speechbrain 0.5's beam search (VPC 2024's "
    "transformer_inference.yaml uses it); speechbrain 1.x folders use S2STransformerBeamSearcher with a "
    "ScorerBuilder of CTCScorer and TransformerLMScorer, which vpeval reads",
}
MAX_INT = 1 << 20  # a typo must not allocate terabytes before the weights fail to load
MAX_STEPS = 200_000
_TUPLE = re.compile(r"\(.*\)")  # HyperPyYAML's implicit tuple resolver
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_ARITHMETIC |= {ast.FloorDiv: operator.floordiv, ast.USub: operator.neg}


Tag = Tagged  # the shared reader's record: kind, target, value, line


def require_speechbrain(plugin: str) -> None:
    """One sentence instead of an ImportError when the optional SpeechBrain stack is missing."""
    from importlib.util import find_spec

    missing = [name for name in ("torch", "speechbrain", "transformers", "sentencepiece") if find_spec(name) is None]
    if missing:
        from vpeval.errors import PluginError

        raise PluginError(
            f"{plugin} reads SpeechBrain folders with {', '.join(missing)}, which is not installed: "
            "pip install 'vpeval-speech-metrics[speechbrain]'."
        )


def read_hparams(path: Path) -> dict[str, Any]:
    """The top-level mapping of a hyperparams.yaml with its tags inert (vpeval-sbfolder's reader: size and
    alias caps); refuses untrusted tags anywhere in the file."""
    values = HyperParams.read(path).values
    seen: set[int] = set()
    for key, value in values.items():
        for tag in tags(value, seen):
            refuse_untrusted(tag, path, str(key))
    return values


def refuse_untrusted(tag: Tag, path: Path, key: str) -> None:
    where = f"{path}, line {tag.line} (under {key})"
    if tag.kind == "apply" and tag.target not in TOLERATED_APPLY:
        raise MissingModelError(
            f"{where} calls !apply:{tag.target} when loaded; vpeval never runs code from a model folder, so it "
            "refuses this folder: remove that line, or use a folder whose hyperparams.yaml only declares modules."
        )
    if tag.kind in ("new", "name") and not tag.target.startswith(TRUSTED_PACKAGES):
        raise MissingModelError(
            f"{where} names !{tag.kind}:{tag.target}, which is not a speechbrain, torch or sentencepiece class; "
            "vpeval never imports code a model folder names, so it refuses this folder."
        )
    if tag.kind not in ("new", "name", "apply", "ref", "copy", "PLACEHOLDER"):
        raise MissingModelError(f"{where} has the tag !{tag.kind}, which vpeval does not read; remove it.")


class Graph:
    """Builds top-level entries of a hyperparams mapping on demand, each once (shared by reference)."""

    def __init__(self, values: dict[str, Any], path: Path, special: dict[str, Any] | None = None):
        self.values = values
        self.path = path
        self.special = special or {}  # dotted name -> factory(kwargs) for classes built another way
        self.built: dict[str, Any] = {}
        self.stack: list[str] = []
        self.steps = 0

    def where(self, key: str, line: int | None = None) -> str:
        return f"{self.path}" + (f", line {line}" if line else "") + f" (under {key})"

    def get(self, key: str) -> Any:
        if key in self.built:
            return self.built[key]
        if key not in self.values:
            raise MissingModelError(f"{self.path} has no entry `{key}`, which this SpeechBrain interface needs.")
        if key in self.stack:
            raise MissingModelError(f"{self.path}: `{key}` refers to itself through {' -> '.join(self.stack)}.")
        self.stack.append(key)
        try:
            self.built[key] = self.resolve(self.values[key], key)
        finally:
            self.stack.pop()
        return self.built[key]

    def resolve(self, value: Any, key: str) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:  # YAML aliases can make a small file a huge tree: no real model needs this
            raise MissingModelError(
                f"{self.path} expands to over {MAX_STEPS} values: not a SpeechBrain hyperparams file."
            )
        if isinstance(value, list):
            return [self.resolve(v, key) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v, key) for k, v in value.items()}
        if isinstance(value, str) and _TUPLE.fullmatch(value):
            return _tuple(value, self.where(key))  # HyperPyYAML reads `(8, 10, 80)` as a tuple
        if not isinstance(value, Tag):
            return value
        if value.kind == "ref":
            return self.reference(value, key)
        if value.kind in ("new", "name"):
            return self.construct(value, key)
        raise MissingModelError(
            f"{self.where(key, value.line)}: !{value.kind}:{value.target} is not something vpeval builds."
        )

    def reference(self, tag: Tag, key: str) -> Any:
        text = str(tag.value).strip()
        names = REF.findall(text)
        if not names:
            raise MissingModelError(f"{self.where(key, tag.line)}: `!ref {text}` names no <key>.")
        if REF.fullmatch(text):
            return self.lookup(names[0], key, tag.line)
        parts = {name: self.lookup(name, key, tag.line) for name in names}
        substituted = REF.sub(lambda m: repr(parts[m.group(1)]), text)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in parts.values()):
            return _arithmetic(substituted, self.where(key, tag.line))  # `!ref <a> * 2`, numbers only
        return REF.sub(lambda m: str(parts[m.group(1)]), text)  # text: `<save_folder>/wav2vec2`

    def lookup(self, name: str, key: str, line: int) -> Any:
        top, *rest = re.split(r"[\[\]]+", name.strip().rstrip("]"))
        value = self.get(top.strip())
        for part in rest:
            if not isinstance(value, dict) or part not in value:
                raise MissingModelError(f"{self.where(key, line)}: the reference <{name}> has no [{part}].")
            value = value[part]
        return value

    def construct(self, tag: Tag, key: str) -> Any:
        where = self.where(key, tag.line)
        if tag.target in LEGACY:
            raise MissingModelError(f"{where}: !{tag.kind}:{tag.target} is {LEGACY[tag.target]}.")
        if tag.target not in BUILDABLE and tag.target not in self.special:
            raise MissingModelError(
                f"{where}: vpeval builds only speechbrain's own layers from an allow-list, and "
                f"!{tag.kind}:{tag.target} is not on it."
            )
        raw = tag.value if tag.value not in ("", None) else {}
        arguments = self.resolve(raw, key)
        args, kwargs = (arguments, {}) if isinstance(arguments, list) else ([], dict(arguments))
        for name, value in kwargs.items():
            if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
                raise MissingModelError(f"{where}: {name}: {value} is beyond any real model's size.")
        if tag.target in self.special:
            if tag.kind != "new" or args:
                raise MissingModelError(f"{where}: write !new:{tag.target} with keyword arguments.")
            return self.special[tag.target](kwargs, where)
        module, _, name = tag.target.rpartition(".")
        obj = getattr(import_module(module), name)  # only names from BUILDABLE reach this line
        if tag.kind == "name":
            return functools.partial(obj, *args, **kwargs)
        return obj(*args, **kwargs)

    def pretrainer(self, key: str = "pretrainer") -> tuple[dict[str, Any], dict[str, str]]:
        """The Pretrainer's loadables (built) and paths, read as data; the Pretrainer is never built."""
        tag = self.values.get(key)
        if not isinstance(tag, Tag) or tag.target != PRETRAINER or not isinstance(tag.value, dict):
            raise MissingModelError(
                f"{self.path} has no `{key}: !new:{PRETRAINER}` with loadables, so vpeval cannot tell which "
                "checkpoint fills which module."
            )
        loadables = tag.value.get("loadables") or {}
        paths = self.resolve(tag.value.get("paths") or {}, key)
        return {str(name): self.resolve(ref, key) for name, ref in loadables.items()}, {
            str(k): str(v) for k, v in paths.items()
        }


def _tuple(text: str, where: str) -> tuple | str:
    """A tuple of literals (numbers, text, booleans, None), read without evaluating anything else; other
    text in parentheses stays text."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return value if isinstance(value, tuple) else (value,)


def _arithmetic(text: str, where: str) -> float | int:
    """A number from `+ - * / //` over numbers only (what HyperPyYAML's !ref arithmetic is used for)."""

    def value(node: ast.AST):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _ARITHMETIC:
            return _ARITHMETIC[type(node.op)](value(node.operand))
        raise MissingModelError(f"{where}: `{text}` is not arithmetic on numbers, the only expression vpeval reads.")

    try:
        return value(ast.parse(text, mode="eval").body)
    except SyntaxError:
        raise MissingModelError(f"{where}: `{text}` is not arithmetic on numbers.") from None


def load_loadable(obj: Any, path: Path, log=None) -> None:
    """Fill one Pretrainer loadable as speechbrain's default transfer hooks do, without unpickling code."""
    import torch

    normaliser = type(obj).__name__ == "InputNormalization" and type(obj).__module__.startswith("speechbrain")
    if isinstance(obj, torch.nn.Module) and not normaliser:
        from speechbrain.utils.checkpoints import hook_on_loading_state_dict_checkpoint

        state = hook_on_loading_state_dict_checkpoint(load_checkpoint(path, mapped=True))  # copied at once
        result = obj.load_state_dict(state, strict=False)
        if len(result.missing_keys) == len(obj.state_dict()) and result.missing_keys:
            raise MissingModelError(f"{path} holds none of the weights of the module it should fill ({type(obj)}).")
        if log is not None and (result.missing_keys or result.unexpected_keys):
            log.warning(
                "%s: %d weights not in the checkpoint, %d checkpoint entries unused (speechbrain tolerates both)",
                path,
                len(result.missing_keys),
                len(result.unexpected_keys),
            )
        return
    type_name = f"{type(obj).__module__}.{type(obj).__name__}"
    if type_name == "speechbrain.processing.features.InputNormalization":
        obj._load_statistics_dict(load_checkpoint(path))  # its own loader, weights only
        return
    if type_name.startswith("sentencepiece"):
        obj.load(str(path))  # a sentencepiece model proto: data
        return
    if type_name == "speechbrain.dataio.encoder.CategoricalEncoder":
        obj.load(path)  # label lines read with ast.literal_eval
        return
    raise MissingModelError(f"{path}: vpeval does not know how to fill a {type_name} from a checkpoint.")


def local_hf_folder(source: str, folder: Path, override: str | None, parameter: str) -> Path:
    """The local transformers folder a wav2vec2 `source` names: the override, the source itself (absolute
    or relative to the model folder), or a hub cache snapshot under the folder; never a download."""
    if override is not None:
        candidates = [Path(override).expanduser()]
    else:
        given = Path(source).expanduser()
        candidates = [given if given.is_absolute() else folder / given]
        cache = f"models--{source.replace('/', '--')}"
        candidates += sorted(folder.glob(f"**/{cache}/snapshots/*"))
    for candidate in candidates:
        if (candidate / "config.json").is_file():
            return candidate
    raise MissingModelError(
        f"The wav2vec2 source `{source}` of {folder / 'hyperparams.yaml'} is not a local transformers folder, and "
        f"vpeval never downloads: set the parameter {parameter} to a local folder of that model (config.json, "
        "preprocessor_config.json and its weights, as save_pretrained writes them)."
    )
