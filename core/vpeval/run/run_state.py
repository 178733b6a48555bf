"""What the stages of one run share: the resolved experiment, the cache, the console, the executor, and
what the stages create as they go; plus how a stage makes a plugin instance with its context."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.api import Anonymizer, Executor, Metric, Plugin, PluginContext
from vpeval.build import build_helper, build_resolved
from vpeval.builtin.local_executor import LocalProcesses
from vpeval.run.cache import StageCache, stable_key
from vpeval.run.console import RunConsole
from vpeval.schema import ResolvedExperiment, ResolvedPlugin
from vpeval.types import Corpus, EvaluationPlan
from vpeval.vector_table import VectorTable


@dataclass
class RunState:
    """One run's shared state; made at the start of `Runner.run`, read and filled by the stages."""

    exp: ResolvedExperiment
    cache: StageCache
    console: RunConsole
    executor: Executor  # the experiment's `executor` plugin (local by default); closed when the run ends
    manager: Any  # the plugin manager (vpeval.plugins)
    device: str
    precision: str
    allow_pipes: bool = False
    plan: EvaluationPlan | None = None  # once the data stage made it
    fingerprint: str = ""  # the corpus's content fingerprint, part of every stage key
    stamps: dict[str, list[int]] = field(default_factory=dict)  # audio path -> its stat stamp when fingerprinted
    timings: dict[str, float] = field(default_factory=dict)
    executed: dict[str, list[str]] = field(default_factory=dict)  # stage -> labels computed (not reused)
    # (anonymizer label, plan part) -> (its anonymize key, the anonymized corpus)
    anonymized: dict[tuple[str, str], tuple[str, Corpus]] = field(default_factory=dict)
    anonymizers: dict[str, list[Anonymizer]] = field(default_factory=dict)  # label -> chain instances
    prepared: set[str] = field(default_factory=set)  # labels whose instances ran prepare()
    metrics: dict[str, Metric] = field(default_factory=dict)  # metric label -> instance
    represented: dict[tuple, VectorTable] = field(default_factory=dict)  # (train key, speech version) -> side vectors
    training: dict[tuple[str, str | None], list[dict[str, Any]]] = field(default_factory=dict)  # RunResult.training
    planned: dict[tuple[str, str], str] | None = None  # planning only: (stage, key) -> label (Runner.plan)

    @property
    def settings(self):
        return self.exp.experiment

    @property
    def folder(self) -> Path:
        return self.exp.output

    @property
    def log(self):
        return self.console.log

    @property
    def options(self) -> dict[str, Any]:
        """The options every plugin instance of the run is given (PluginContext.options)."""
        return {"allow_pipes": self.allow_pipes, "cache_root": self.cache.root}

    def context(self, *parts: str) -> PluginContext:
        return PluginContext(
            seed=self.settings.seed,
            work_dir=self.cache.root / "work" / Path(*parts),
            threads=self.settings.threads,
            workers=self.settings.workers,
            training_threads=training_threads(self.settings),
            log=self.log.getChild(parts[-1] if parts else "plugin"),
            plugin_factory=self.make_helper,
            progress_factory=self.console.track,
            options=self.options,
            executor=self.executor,
            device=self.device,
            precision=self.precision,
        )

    def instantiate(self, plugin: ResolvedPlugin, *work: str) -> Plugin:
        context = self.context(*(work or (f"{plugin.kind}-{plugin.use}", stable_key(plugin.identity())[:16])))
        return build_resolved(self.manager, plugin, context)

    def make_helper(self, kind: str, name: str, params: dict | None) -> Plugin:
        cls = self.manager.get(kind, name)

        def context(validated) -> PluginContext:
            identity = {"kind": kind, "use": name, "params": validated.model_dump(mode="json"), "version": cls.version}
            return self.context(f"{kind}-{name}", stable_key(identity)[:16])

        return build_helper(cls, params, context)

    def remembered(self, train_key: str, version: str | None) -> VectorTable:
        """The side vectors of one trained attacker on one version of the speech (None: the original)."""
        return self.represented.setdefault((train_key, version), VectorTable(np.float64))

    def anonymized_key(self, label: str, part: str = "evaluation") -> str:
        """The anonymize stage's key of anonymizer `label`'s version of the plan's `part`."""
        return self.anonymized[(label, part)][0]


def training_threads(settings: Any) -> int:
    """Trainings' torch threads: `threads`, and `workers` only where the file names it (not every core)."""
    return max(1, settings.threads, settings.workers if "workers" in settings.model_fields_set else 1)


def open_executor(exp: ResolvedExperiment, cache: StageCache, manager: Any, console: RunConsole) -> Executor:
    """The experiment's executor plugin (never part of a cache key); local for experiments resolved before it
    existed."""
    settings = exp.experiment
    context = PluginContext(
        seed=settings.seed,
        work_dir=cache.root / "work" / "executor",
        threads=settings.threads,
        workers=settings.workers,
        log=console.log.getChild("executor"),
        options={"cache_root": cache.root},
    )
    spec = exp.executor
    if spec is None:
        return LocalProcesses(context=context)
    executor = build_resolved(manager, spec, context)
    if executor.remote:
        console.log.info(
            "executor %s: anonymization and plugins' per-utterance stages (PluginContext.map: "
            "embeddings, features, transcripts) run on its workers; training runs here",
            spec.use,
        )
    return executor
