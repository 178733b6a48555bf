"""The staged runner: data -> anonymize -> frontend -> attack (train, represent, score) -> metrics -> report.

This module only orders the stages; each lives in its own module (stage_data, stage_anonymize,
stage_train, stage_score, stage_metrics) as functions over one `RunState` (run_state.py), which holds what
they share and what the run creates as it goes. Every stage output, metric rows included, is cached under
a content key through one step (cached_step.get_or_build), so changing one attacker reruns only that
attacker and a killed run resumes where it stopped with the same numbers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vpeval.audio import decoded_audio
from vpeval.data.fingerprint import remembered_hashes
from vpeval.device import available_cores, effective_precision, resolve_device
from vpeval.plugins import get_plugin_manager
from vpeval.run.cache import StageCache
from vpeval.run.console import RunConsole
from vpeval.run.folder import claim_run_folder, experiment_run_folder, run_folder_lock
from vpeval.run.run_state import RunState, open_executor
from vpeval.run.stage_anonymize import anonymize
from vpeval.run.stage_data import data_stage
from vpeval.run.stage_metrics import (
    METRIC_INPUTS,
    MetricScope,
    TrainedAttacker,
    attacker_metric_rows,
    metric_rows,
    metrics_read_anonymized,
    refuse_unknown_metric_inputs,
)
from vpeval.run.stage_score import ScoreSet, score_attacker
from vpeval.run.stage_train import fit_frontend, train_attacker
from vpeval.schema import ResolvedExperiment
from vpeval.types import Corpus

# What other code imports from here: the runner's names, and some of its stages'.
__all__ = ["METRIC_INPUTS", "RunResult", "RunState", "Runner", "ScoreSet", "default_cache_root"]

CACHE_ENV = "VPEVAL_CACHE"
DEFAULT_CACHE = ".vpeval-cache"


def default_cache_root() -> Path:
    """$VPEVAL_CACHE, or .vpeval-cache when it is unset or empty (an empty value means unset, as in most shells'
    conventions; it used to put the cache's folders straight into the working directory)."""
    value = os.environ.get(CACHE_ENV, "")
    return Path(value if value.strip() else DEFAULT_CACHE)


@dataclass
class RunResult:
    folder: Path
    rows: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)
    executed: dict[str, list[str]] = field(default_factory=dict)  # stage -> labels computed (not reused)
    skipped_audio: list[tuple[str, str, str]] = field(default_factory=list)
    anonymized: dict[str, Corpus] = field(default_factory=dict)  # anonymizer label -> evaluation speech
    # (attacker label, anonymizer it trained on or None) -> its training curve (Attacker.training_curve)
    training: dict[tuple[str, str | None], list[dict[str, Any]]] = field(default_factory=dict)


class Runner:
    """Runs one resolved experiment.

    `output` is the run folder the caller chose (the command line's --output: any path); without it the
    experiment's `output` (inside the working directory) or runs/<name>. `overwrite` allows a folder
    vpeval did not create; `allow_pipes` lets Kaldi wav.scp shell pipes run. `force` names stages to
    recompute; `no_cache` uses a throwaway cache.
    """

    def __init__(
        self,
        experiment: ResolvedExperiment,
        cache_root: str | Path | None = None,
        force: Sequence[str] = (),
        no_cache: bool = False,
        quiet: bool = False,
        output: str | Path | None = None,
        overwrite: bool = False,
        allow_pipes: bool = False,
    ):
        if output is None:
            experiment_run_folder(experiment)  # refuses a file's output outside the working directory
        else:
            experiment = experiment.model_copy(deep=True)
            experiment.experiment.output = str(output)  # resolved.yaml records where the run went
        self.exp = experiment
        self.settings = experiment.experiment
        self.folder = experiment.output
        self.overwrite = overwrite
        self.allow_pipes = allow_pipes
        self._tmp_cache = Path(tempfile.mkdtemp(prefix="vpeval-nocache-")) if no_cache else None
        self._removal = threading.Thread(target=shutil.rmtree, args=(self._tmp_cache, True)) if no_cache else None
        self.cache = StageCache(self._tmp_cache or cache_root or default_cache_root(), set(force), no_cache)
        self.quiet = quiet
        self.manager = get_plugin_manager()
        self.device = resolve_device(self.settings.device)  # auto: CUDA when torch sees a GPU
        self.precision = effective_precision(self.device, self.settings.precision, self.settings.cpu_precision)
        self._state: RunState | None = None

    @property
    def state(self) -> RunState:
        assert self._state is not None, "the run state exists while run() runs"
        return self._state

    def run(self) -> RunResult:
        try:
            claim_run_folder(self.folder, self.overwrite)
            with (
                run_folder_lock(self.folder, self.quiet),
                RunConsole(self.folder / "run.log", quiet=self.quiet) as console,
                decoded_audio() as decoded,  # each file decoded once, hashed once, whatever stages read it
                remembered_hashes(min(self.settings.workers, available_cores())),  # file lists checked on threads
            ):
                executor = open_executor(self.exp, self.cache, self.manager, console)
                self._state = RunState(
                    self.exp, self.cache, console, executor, self.manager, self.device, self.precision, self.allow_pipes
                )
                console.log.info("run %s -> %s (cache %s)", self.settings.name, self.folder, self.cache.root)
                console.log.info("torch device %s, precision %s", self.device, self.precision)
                if self.precision != self.settings.precision:
                    console.log.info(
                        "precision %s is for a GPU; the CPU computes in cpu_precision", self.settings.precision
                    )
                if self.device == "cpu" and self.precision != "fp32":  # a warning, so report.md's doubts list it
                    console.log.getChild("device").warning(
                        "torch models computed in bf16 on the CPU (cpu_precision: bf16): numbers differ from fp32 runs "
                        "in the last digits and, near thresholds, in decisions (transcripts, classes, trial order)"
                    )
                try:
                    return self._run()
                finally:
                    executor.close()
                    console.log.info(
                        "audio: %d files decoded, %d reads served decoded (%d MB held, bound %d MB; %d past it "
                        "not kept)",
                        *(decoded.decoded, decoded.hits, decoded.bytes >> 20, decoded.limit >> 20, decoded.refused),
                    )
        finally:
            if self._removal is not None and self._removal.is_alive():
                self._removal.join()
            if self._tmp_cache is not None:
                shutil.rmtree(self._tmp_cache, ignore_errors=True)

    def plan(self) -> dict[tuple[str, str], str]:
        """(stage, key) -> label of each cached step of the run, in order, none computed (`validate --plan`): the data
        stage runs (every key holds the corpus fingerprint); later keys chain keys, not values, so stand-ins do."""
        with RunConsole(self.folder / "run.log", quiet=True) as console:  # the caller gives a scratch folder
            self._state = RunState(self.exp, self.cache, console, None, self.manager, self.device, self.precision)
            self.state.planned = {}
            self._stages()
        return self.state.planned

    def _run(self) -> RunResult:
        from vpeval.report.writer import write_outputs

        state, started = self.state, time.perf_counter()
        rows, plan, skipped, anonymized_eval, score_sets = self._stages()
        state.timings["total"] = time.perf_counter() - started
        result = RunResult(
            self.folder, rows, state.timings, state.executed, skipped, anonymized_eval, dict(state.training)
        )
        if self._removal is not None:  # nothing reads a throwaway cache now: removing its many small files waits
            self._removal.start()  # on the disk, not the CPU, beside the report's drawing (run() waits for it)
        write_outputs(self.exp, result, plan, score_sets)
        state.log.info("results: %s", self.folder / "results.json")
        return result

    def _stages(self):
        state, exp = self.state, self.exp
        refuse_unknown_metric_inputs(state)
        _corpus, plan, skipped = data_stage(state)

        # Anonymize: the evaluation speech when a protocol or a metric reads it; the attacker-train speech
        # for attackers that train on an anonymizer's.
        anonymized_eval: dict[str, Corpus] = {}
        evaluation_read = bool({"O-A", "A-A"} & set(self.settings.protocols)) or metrics_read_anonymized(state)
        train_on_anonymized = any(att.train_on == "anonymized" for att in exp.attackers)
        for anon in exp.anonymizers:
            if evaluation_read:
                anonymized_eval[anon.label] = anonymize(state, anon, plan.evaluation, "evaluation")
            if train_on_anonymized:
                anonymize(state, anon, plan.train, "train")
                if plan.validation is not None:
                    anonymize(state, anon, plan.validation, "validation")

        # Attack: each attacker trained per speech it trains on, scored, and its per-attacker metric rows
        # computed while it is in memory.
        score_sets: list[ScoreSet] = []
        attacker_rows: list[dict[str, Any]] = []
        for att in exp.attackers:
            frontend = fit_frontend(state, att, plan.train) if att.frontend else None
            for system in [None] if att.train_on == "original" else list(exp.anonymizers):
                attacker, train_key = train_attacker(state, att, system, frontend)
                if self.manager.get("attacker", att.plugin.use).needs_training and state.planned is None:
                    state.training[(att.label, system.label if system else None)] = list(attacker.training_curve())
                for anon in exp.anonymizers or [None]:
                    if att.train_on == "anonymized" and anon is not system:
                        continue
                    score_sets += score_attacker(state, att, attacker, train_key, anon, plan, anonymized_eval)
                trained = TrainedAttacker(att, attacker, train_key, system)
                attacker_rows += attacker_metric_rows(state, MetricScope(plan, anonymized_eval, trained=trained))

        # Metrics of the whole run, then the report.
        rows = metric_rows(state, MetricScope(plan, anonymized_eval, score_sets=score_sets), attacker_rows)
        return rows, plan, skipped, anonymized_eval, score_sets
