"""The experiment file's schema and its resolved form (what resolved.yaml holds and a run reads).

A ground-floor leaf: vpeval.config fills these types from a file, vpeval.config_checks reads them, the
builder and the runner take them; none of those is imported here.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from vpeval.device import DEVICE_PATTERN, available_cores
from vpeval.report_spec import ReportSpec
from vpeval.settings import EnrollSizes, PlanSettings, Seed, SplitSettings, StrictModel, non_empty_distinct

SCENARIO_ALIASES = {
    "original": "original",
    "ignorant": "original",
    "lazy-informed": "original",
    "anonymized": "anonymized",
    "semi-informed": "anonymized",
}


def _scenario(value: Any) -> Any:
    if isinstance(value, str) and value.lower() in SCENARIO_ALIASES:
        return SCENARIO_ALIASES[value.lower()]
    return value


def _plugin_shorthand(value: Any) -> Any:
    """`eer` is short for `{use: eer}`."""
    return {"use": value} if isinstance(value, str) else value


Strict = StrictModel  # unknown keys, true-for-a-number and NaN/infinity are all errors


def table_breaking(text: str) -> str | None:
    """What in `text` would break a row of report.md's tables or of a LaTeX table, or a terminal line: a
    line break, another control or format character (an ANSI escape, a bidi override) or '|'; None if none."""
    for ch in text:
        if ch == "|":
            return "'|' (it separates table cells)"
        if ch in "\n\r\v\f\x85\u2028\u2029":
            return "a line break"
        if unicodedata.category(ch) in ("Cc", "Cf"):
            return f"the control character U+{ord(ch):04X}"
    return None


def _label_text(value: str) -> str:
    problem = table_breaking(value)
    if problem:
        raise ValueError(
            f"a label is one line of report tables, LaTeX rows and logs, so it cannot hold {problem}; write it without"
        )
    if not value.strip():
        raise ValueError("a label needs a visible character; remove `label` to get the default one")
    return value


Label = Annotated[str, AfterValidator(_label_text)]


class Recorded(Strict):
    """What resolved.yaml records about each plugin, so that rerunning it uses the same plugin versions."""

    distribution: str | None = Field(
        default=None, description="the distribution that provided the plugin (resolved.yaml)"
    )
    version: str | None = Field(
        default=None, description="its version; another installed version is refused (resolved.yaml)"
    )
    code: str | None = Field(
        default=None, description="hash of its source files, for the cache; not checked (resolved.yaml)"
    )


class PluginSpec(Recorded):
    use: str = Field(description="registered plugin name")
    params: dict[str, Any] = Field(default_factory=dict, description="the plugin's parameters")
    label: Label | None = Field(
        default=None, description="name shown in results (default: derived from use and params)"
    )


Spec = Annotated[PluginSpec, BeforeValidator(_plugin_shorthand)]


class AnonymizerSpec(Strict):
    """One anonymizer, or a chain of them applied in order, named as one conversion system."""

    use: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    chain: list[Spec] | None = None
    level: Literal["utterance", "speaker"] = Field(
        default="utterance", description="a new pseudo-speaker per utterance (VPC 2024) or one per speaker"
    )
    label: Label | None = None

    @model_validator(mode="after")
    def _use_or_chain(self) -> AnonymizerSpec:
        if (self.use is None) == (self.chain is None):
            raise ValueError("give either `use` (one anonymizer) or `chain` (a list of anonymizers), not both")
        if self.chain is not None and self.params:
            raise ValueError("`params` belong inside each element of `chain`")
        if self.chain is not None and not self.chain:
            raise ValueError("`chain` needs at least one anonymizer")
        return self

    def steps(self) -> list[PluginSpec]:
        return list(self.chain) if self.chain is not None else [PluginSpec(use=self.use or "", params=self.params)]


AnonSpec = Annotated[AnonymizerSpec, BeforeValidator(_plugin_shorthand)]


class AttackerSpec(Recorded):
    use: str
    params: dict[str, Any] = Field(default_factory=dict)
    train_on: Annotated[Literal["original", "anonymized"], BeforeValidator(_scenario)] = Field(
        default="original",
        description="original (VoicePrivacy ignorant / lazy-informed) or anonymized (semi-informed)",
    )
    frontend: Spec | None = Field(default=None, description="speech-token frontend the attacker consumes")
    init_from: str | None = Field(
        default=None, description="label of another attacker of this experiment to fine-tune from (its trained model)"
    )
    label: Label | None = None


AttSpec = Annotated[AttackerSpec, BeforeValidator(_plugin_shorthand)]


def _pipes_from_command_line_only(value: bool) -> bool:
    """An experiment file may come from someone else; only the person running vpeval may allow commands."""
    if value:
        raise ValueError(
            "shell pipes in wav.scp run commands, so only the command line can allow them: remove "
            "`allow_pipes` and run `vpeval --allow-pipes ...`"
        )
    return value


def _plain_name(value: str) -> str:
    if not value.strip() or value in (".", "..") or any(c in value for c in "/\\\0"):
        raise ValueError(
            "the experiment name must be a plain name (no '/', '\\', '.' or '..'): "
            "the default run folder is runs/<name>"
        )
    problem = table_breaking(value)
    if problem:
        raise ValueError(
            f"the experiment name heads report.md and LaTeX tables, so it cannot hold {problem}; write it without"
        )
    return value


class DataSpec(SplitSettings):
    """The `data` section: the corpus, how to treat bad audio, and the split settings (vpeval.settings)."""

    corpus: Spec
    on_bad_audio: Literal["fail", "skip"] = "fail"
    allow_pipes: Annotated[bool, AfterValidator(_pipes_from_command_line_only)] = Field(
        default=False, description="refused: pass --allow-pipes on the command line to run wav.scp shell pipes"
    )


class Experiment(Strict):
    name: Annotated[str, AfterValidator(_plain_name)]
    seed: Seed = 0
    data: DataSpec
    anonymizers: list[AnonSpec] = Field(default_factory=list)
    attackers: list[AttSpec] = Field(default_factory=list)
    protocols: Annotated[list[Literal["O-O", "O-A", "A-A"]], non_empty_distinct("protocol", "[O-O, O-A, A-A]")] = Field(
        default_factory=lambda: ["O-O", "O-A", "A-A"]
    )
    enroll_utterances: EnrollSizes = Field(default_factory=lambda: [1])
    metrics: list[Spec] = Field(default_factory=lambda: [PluginSpec(use="eer")])
    output: str | None = Field(
        default=None, description="run folder inside the working directory (default runs/<name>); --output names any"
    )
    threads: int = Field(default=1, ge=1, le=1024, description="CPU threads for torch and numerical libraries")
    workers: int = Field(
        default_factory=available_cores, ge=1, le=1024, description="processes or threads for per-item work (all cores)"
    )
    device: str = Field(
        default="auto",
        pattern=DEVICE_PATTERN,
        description="where torch models run: auto (CUDA when torch sees a GPU, else the CPU), cpu, cuda or "
        "cuda:N (vpeval.device); on a GPU the torch plugins' cache keys carry the device type",
    )
    precision: Literal["fp32", "bf16", "fp16"] = Field(
        default="fp32",
        description="torch precision on a GPU (autocast); the CPU computes in cpu_precision",
    )
    cpu_precision: Literal["fp32", "bf16"] = Field(
        default="fp32",
        description="torch precision on the CPU: fp32, or bf16 (autocast; needs AVX512-BF16 or AMX; own cache keys)",
    )
    executor: Spec | None = Field(
        default=None,
        description="where per-utterance stages run: {use: local} (the default: "
        "this machine, `workers` processes) or a cluster executor such as dask; never part of a cache key",
    )
    prepare: Label | None = Field(
        default=None,
        description="how to make the inputs this file reads that vpeval does not make (a command, a script), "
        "printed after the sentences naming missing files and folders",
    )
    report: ReportSpec | None = Field(
        default=None,
        description="the paper's tables, curves and findings that report.md prints "
        "(vpeval.report_spec); never part of a cache key",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Experiment:
        if not self.attackers and not any(True for _ in self.metrics):
            raise ValueError("name at least one attacker or metric")
        needs_anon = {"O-A", "A-A"} & set(self.protocols) or any(a.train_on == "anonymized" for a in self.attackers)
        if needs_anon and not self.anonymizers:
            raise ValueError("protocols O-A / A-A and train_on: anonymized need at least one anonymizer")
        return self

    def plan_settings(self) -> PlanSettings:
        """The one settings object the data plan reads: the data section's split settings, seed and N."""
        split = self.data.model_dump(include=set(SplitSettings.model_fields))
        return PlanSettings.model_validate(
            {**split, "seed": self.seed, "enroll_utterances": list(self.enroll_utterances)}
        )


# -- the resolved form: each plugin named, its params validated and filled in (resolved.yaml) ---------


class ResolvedPlugin(BaseModel):
    """A plugin named by the experiment, with every parameter filled in."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: str
    use: str
    params: dict[str, Any]
    distribution: str
    version: str
    label: str
    code: str = ""  # hash of the plugin package's source files
    helpers: str = ""  # hash of the source of the plugins its params name ("" when it names none)
    numerics: dict[str, str] = {}  # device and precision off the CPU's fp32 (device-sensitive ones), kernel pins

    def identity(self) -> dict[str, Any]:
        """What the cache key hashes: the code (distribution, version, source hash), the code of the plugins
        its params name (an encoder, an ASR, a pool corpus) and the validated params.

        The source hashes catch code edited without a version bump (editable installs, development).
        """
        identity = {
            "kind": self.kind,
            "use": self.use,
            "params": self.params,
            "dist": self.distribution,
            "version": self.version,
            "code": self.code,
        }
        if self.helpers:  # only then: the keys of plugins that name no other plugin stay as they were
            identity["helpers"] = self.helpers
        if self.numerics:  # only off the CPU's fp32 or with kernel pins: other keys stay as before devices existed
            identity["numerics"] = self.numerics
        return identity


class ResolvedAnonymizer(BaseModel):
    label: str
    level: str
    steps: list[ResolvedPlugin]

    def identity(self) -> dict[str, Any]:
        return {"level": self.level, "steps": [s.identity() for s in self.steps]}


class ResolvedAttacker(BaseModel):
    label: str
    plugin: ResolvedPlugin
    train_on: str
    frontend: ResolvedPlugin | None = None
    init_from: str | None = None


class ResolvedExperiment(BaseModel):
    """The validated experiment, every default filled in; what resolved.yaml holds."""

    source: str
    experiment: Experiment
    corpus: ResolvedPlugin
    anonymizers: list[ResolvedAnonymizer]
    attackers: list[ResolvedAttacker]
    metrics: list[ResolvedPlugin]
    executor: ResolvedPlugin | None = None  # None: the built-in local executor

    @property
    def output(self) -> Path:
        return Path(self.experiment.output or f"runs/{self.experiment.name}")

    @property
    def plan_settings(self) -> PlanSettings:
        """How the data plan splits speakers and draws trials (checked when the experiment loaded)."""
        return self.experiment.plan_settings()

    def to_dict(self) -> dict[str, Any]:
        exp = self.experiment.model_dump(mode="json")
        exp["data"]["corpus"] = _plugin_dict(self.corpus)
        exp["anonymizers"] = [
            {"label": a.label, "level": a.level, "chain": [_plugin_dict(s) for s in a.steps]} for a in self.anonymizers
        ]
        exp["attackers"] = [
            {
                "label": a.label,
                **_plugin_dict(a.plugin),
                "train_on": a.train_on,
                "frontend": _plugin_dict(a.frontend) if a.frontend else None,
                "init_from": a.init_from,
            }
            for a in self.attackers
        ]
        exp["metrics"] = [_plugin_dict(m) for m in self.metrics]
        if self.executor is not None:
            exp["executor"] = _plugin_dict(self.executor)
        exp["output"] = str(self.output)
        return exp


def _plugin_dict(p: ResolvedPlugin) -> dict[str, Any]:
    return {"use": p.use, "params": p.params, "distribution": p.distribution, "version": p.version, "code": p.code}
