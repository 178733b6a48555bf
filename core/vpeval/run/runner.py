"""The staged runner: data -> anonymize -> frontend -> attack (train, represent, score) -> metrics -> report.

Every stage output, metric rows included, is cached under a content key (see cache.py) through one
step, `_get_or_build`, so changing one attacker reruns only that attacker and a killed run resumes
where it stopped with the same numbers. What a run creates as it goes lives in one `RunState`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.api import (
    Anonymizer,
    Attacker,
    Executor,
    Frontend,
    Metric,
    MetricInputs,
    Plugin,
    PluginContext,
    SimilarityMatrix,
)
from vpeval.build import build_helper, build_resolved
from vpeval.builtin.local_executor import LocalProcesses
from vpeval.config import ResolvedAnonymizer, ResolvedAttacker, ResolvedExperiment, ResolvedPlugin
from vpeval.device import effective_precision, resolve_device
from vpeval.errors import DataError, PluginError
from vpeval.names import utterance_file
from vpeval.plugins import get_plugin_manager
from vpeval.run.anonymize_task import AnonymizeTask, voice_rng
from vpeval.run.cache import StageCache, stable_key
from vpeval.run.console import RunConsole
from vpeval.run.folder import claim_run_folder, experiment_run_folder, run_folder_lock
from vpeval.run.stored import SpeechFiles, Stored, StoredMetricResults, StoredPlugin, StoredScores, StoredSpeech
from vpeval.run.trial_scoring import represent_sides, trial_scores
from vpeval.types import Corpus, EvaluationPlan, MetricResult, Scores, TrainingData, TrainingStage, TrialList
from vpeval.vector_table import VectorTable

CACHE_ENV = "VPEVAL_CACHE"
DEFAULT_CACHE = ".vpeval-cache"
_DAMAGED = object()  # what _reuse returns for an entry it moved aside


def default_cache_root() -> Path:
    """$VPEVAL_CACHE, or .vpeval-cache when it is unset or empty (an empty value means unset, as in most shells'
    conventions; it used to put the cache's folders straight into the working directory)."""
    value = os.environ.get(CACHE_ENV, "")
    return Path(value if value.strip() else DEFAULT_CACHE)


@dataclass
class ScoreSet:
    anonymizer: str
    attacker: str
    scenario: str
    protocol: str
    n: int
    scores: Scores
    key: str = ""  # the score stage's cache key: what metrics of these scores are keyed by


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


@dataclass
class RunState:
    """What one run creates as it goes; made at the start of `Runner.run`."""

    console: RunConsole
    executor: Executor  # the experiment's `executor` plugin (local by default); closed when the run ends
    plan: EvaluationPlan | None = None  # once the data stage made it
    fingerprint: str = ""  # the corpus's content fingerprint, part of every stage key
    stamps: dict[str, list[int]] = field(default_factory=dict)  # audio path -> its stat stamp when fingerprinted
    timings: dict[str, float] = field(default_factory=dict)
    executed: dict[str, list[str]] = field(default_factory=dict)  # stage -> labels computed (not reused)
    anonymized: dict[tuple[str, str], tuple[str, Corpus]] = field(
        default_factory=dict
    )  # (label, part) -> (key, corpus)
    anonymizers: dict[str, list[Anonymizer]] = field(default_factory=dict)  # label -> chain instances
    prepared: set[str] = field(default_factory=set)  # labels whose instances ran prepare()
    metrics: dict[str, Metric] = field(default_factory=dict)  # metric label -> instance
    represented: dict[tuple, VectorTable] = field(default_factory=dict)  # (train key, speech version) -> side vectors
    training: dict[tuple[str, str | None], list[dict[str, Any]]] = field(default_factory=dict)  # RunResult.training


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
        self.cache = StageCache(self._tmp_cache or cache_root or default_cache_root(), set(force))
        self.quiet = quiet
        self.manager = get_plugin_manager()
        self.device = resolve_device(self.settings.device)  # auto: CUDA when torch sees a GPU
        self.precision = effective_precision(self.device, self.settings.precision)
        self._state: RunState | None = None

    @property
    def state(self) -> RunState:
        assert self._state is not None, "the run state exists while run() runs"
        return self._state

    # -- plumbing ----------------------------------------------------------------------------

    def _context(self, *parts: str) -> PluginContext:
        console = self.state.console
        return PluginContext(
            seed=self.settings.seed,
            work_dir=self.cache.root / "work" / Path(*parts),
            threads=self.settings.threads,
            workers=self.settings.workers,
            log=console.log.getChild(parts[-1] if parts else "plugin"),
            plugin_factory=self._make_helper,
            progress_factory=console.track,
            options={"allow_pipes": self.allow_pipes, "cache_root": self.cache.root},
            executor=self.state.executor,
            device=self.device,
            precision=self.precision,
        )

    def _instantiate(self, plugin: ResolvedPlugin, *work: str) -> Plugin:
        context = self._context(*(work or (f"{plugin.kind}-{plugin.use}", stable_key(plugin.identity())[:16])))
        return build_resolved(self.manager, plugin, context)

    def _make_helper(self, kind: str, name: str, params: dict | None) -> Plugin:
        cls = self.manager.get(kind, name)

        def context(validated) -> PluginContext:
            identity = {"kind": kind, "use": name, "params": validated.model_dump(mode="json"), "version": cls.version}
            return self._context(f"{kind}-{name}", stable_key(identity)[:16])

        return build_helper(cls, params, context)

    def _get_or_build(
        self,
        stage: str,
        label: str,
        key: str,
        stored: Stored,
        compute: Callable[[], Any],
        reads: Sequence[Corpus | None] | None = None,
    ) -> Any:
        """The cache-or-compute step of every stage: reuse the entry under `key`, or compute it, store it
        atomically and record its time. One process at a time builds an entry; others wait and reuse it.

        A damaged entry is moved aside and recomputed. Before a result is stored, the audio files of the
        corpora it may have read (`reads`; default: the whole plan) must be as they were fingerprinted."""
        log = self.state.console.log

        def waiting(holder: str) -> None:
            log.info("%s %s: waiting for %s, which is computing it", stage, label, holder)

        with self.cache.lock(stage, key, waiting):
            if self.cache.exists(stage, key):
                reused = self._reuse(stage, label, key, stored)
                if reused is not _DAMAGED:
                    return reused
            started = time.perf_counter()
            value = compute()
            self._check_unchanged(stage, label, key, reads)
            with self.cache.build(stage, key) as tmp:
                stored.save(value, tmp)
            self._timed(stage, label, started)
            return stored.load(self.cache.path(stage, key)) if stored.reload else value

    def _reuse(self, stage: str, label: str, key: str, stored: Stored) -> Any:
        """The entry's value when it is intact, else `_DAMAGED` (the entry moved aside, with one log line)."""
        log = self.state.console.log
        check = self.cache.verify(stage, key)
        problem = check.problem
        if problem is None:
            try:
                value = stored.load(self.cache.path(stage, key))
            except Exception as exc:
                if not check.legacy:  # its files are as written: a failing load is a bug, not damage
                    raise
                problem = f"it cannot be loaded: {type(exc).__name__}: {exc}"
            else:
                if check.legacy:
                    try:
                        self.cache.adopt(stage, key)
                    except OSError:  # a read-only cache: reused unverified, as before manifests
                        pass
                log.info("%s %s: reused from cache (key %s)", stage, label, key[:12])
                return value
        aside = self.cache.discard(stage, key)
        log.warning(
            "cache entry %s %s (key %s) was damaged (%s); recomputing it (the damaged copy is in %s)",
            stage,
            label,
            key[:12],
            problem,
            aside,
        )
        return _DAMAGED

    def _check_unchanged(self, stage: str, label: str, key: str, reads: Sequence[Corpus | None] | None) -> None:
        """Refuse to store a result when an audio file it may have read changed after fingerprinting."""
        from vpeval.data.fingerprint import changed_file

        plan = self.state.plan
        if reads is None:
            reads = [plan.train, plan.validation, plan.evaluation] if plan is not None else []
        paths = (u.path for corpus in reads if corpus is not None for u in corpus.utterances)
        changed = changed_file(paths, self.state.stamps)
        if changed is not None:
            self.cache.discard_partial(stage, key)  # what it holds may come from the new audio
            raise DataError(
                f"Audio file {changed} changed during the run, after vpeval fingerprinted the corpus and "
                f"before {stage} {label} was stored; rerun the experiment to evaluate the new version."
            )

    def _timed(self, stage: str, label: str, started: float) -> None:
        took = time.perf_counter() - started
        state = self.state
        state.timings[f"{stage}:{label}"] = state.timings.get(f"{stage}:{label}", 0.0) + took
        state.executed.setdefault(stage, []).append(label)
        state.console.log.info("%s %s: computed in %.1f s", stage, label, took)

    def _executor(self, console: RunConsole) -> Executor:
        """The experiment's executor plugin (never part of a cache key); local for experiments resolved before it
        existed."""
        context = PluginContext(
            seed=self.settings.seed,
            work_dir=self.cache.root / "work" / "executor",
            threads=self.settings.threads,
            workers=self.settings.workers,
            log=console.log.getChild("executor"),
            options={"cache_root": self.cache.root},
        )
        spec = self.exp.executor
        if spec is None:
            return LocalProcesses(context=context)
        executor = build_resolved(self.manager, spec, context)
        if executor.remote:
            console.log.info(
                "executor %s: anonymization and plugins' per-utterance stages (PluginContext.map: "
                "embeddings, features, transcripts) run on its workers; training runs here",
                spec.use,
            )
        return executor

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> RunResult:
        try:
            claim_run_folder(self.folder, self.overwrite)
            with (
                run_folder_lock(self.folder, self.quiet),
                RunConsole(self.folder / "run.log", quiet=self.quiet) as console,
            ):
                self._state = RunState(console, self._executor(console))
                console.log.info("run %s -> %s (cache %s)", self.settings.name, self.folder, self.cache.root)
                console.log.info("torch device %s, precision %s", self.device, self.precision)
                if self.precision != self.settings.precision:
                    console.log.info(
                        "precision %s applies on a GPU only; the CPU computes in fp32", self.settings.precision
                    )
                try:
                    return self._run()
                finally:
                    self._state.executor.close()
        finally:
            if self._tmp_cache is not None:
                shutil.rmtree(self._tmp_cache, ignore_errors=True)

    def _run(self) -> RunResult:
        from vpeval.report.writer import write_outputs

        state = self.state
        started = time.perf_counter()
        self._refuse_unknown_metric_inputs()
        corpus, plan, skipped = self._data()
        state.plan = plan
        state.fingerprint = corpus.fingerprint
        score_sets: list[ScoreSet] = []
        attacker_rows: list[dict[str, Any]] = []  # of the per-attacker metric kinds, as each attacker trains
        needs_train_anon = (
            {a.label for a in self.exp.anonymizers}
            if any(att.train_on == "anonymized" for att in self.exp.attackers)
            else set()
        )
        anonymized_eval: dict[str, Corpus] = {}
        metrics_read_anonymized = any(
            kind.reads_anonymized and self._metrics(needs) for needs, kind in METRIC_INPUTS.items()
        )
        for anon in self.exp.anonymizers:
            if {"O-A", "A-A"} & set(self.settings.protocols) or metrics_read_anonymized:
                anonymized_eval[anon.label] = self._anonymize(anon, plan.evaluation, "evaluation")
            if anon.label in needs_train_anon:
                self._anonymize(anon, plan.train, "train")
                if plan.validation is not None:
                    self._anonymize(anon, plan.validation, "validation")

        for att in self.exp.attackers:
            frontend = self._frontend(att, plan.train) if att.frontend else None
            systems = [None] if att.train_on == "original" else list(self.exp.anonymizers)
            for system in systems:
                attacker, train_key = self._train(att, system, frontend)
                if self.manager.get("attacker", att.plugin.use).needs_training:
                    state.training[(att.label, system.label if system else None)] = list(attacker.training_curve())
                for anon in self.exp.anonymizers or [None]:
                    if att.train_on == "anonymized" and anon is not system:
                        continue
                    score_sets += self._score(att, attacker, train_key, anon, plan, anonymized_eval)
                trained = TrainedAttacker(att, attacker, train_key, system)
                attacker_rows += self._attacker_metric_rows(MetricScope(plan, anonymized_eval, trained=trained))

        rows = self._metric_rows(MetricScope(plan, anonymized_eval, score_sets=score_sets), attacker_rows)
        state.timings["total"] = time.perf_counter() - started
        result = RunResult(
            self.folder, rows, state.timings, state.executed, skipped, anonymized_eval, dict(state.training)
        )
        write_outputs(self.exp, result, plan, score_sets)
        state.console.log.info("results: %s", self.folder / "results.json")
        return result

    # -- stages ------------------------------------------------------------------------------

    def _data(self):
        from vpeval.data.fingerprint import corpus_fingerprint, file_stamp, observing_files
        from vpeval.data.plan import make_plan, write_sides, write_trials
        from vpeval.data.scan import scan_corpus

        started = time.perf_counter()
        data = self.settings.data
        log = self.state.console.log
        source = self._instantiate(self.exp.corpus, "corpus-" + self.exp.corpus.use)
        # One process at a time loads a corpus: generated corpora write their audio into the cache. Each
        # file's stat stamp is kept as the fingerprint (or the scan) first saw it: what a stage reads is
        # checked against it before its result is stored (_check_unchanged).
        lock = self.cache.lock("data", self.cache.key("data", {"corpus": self.exp.corpus.identity()}))
        with lock, observing_files() as stamps:
            corpus = source.load()
            # A corpus without a fingerprint gets it from the scan, of its declared values: each file is then
            # read from disk once (hashed just before it is decoded), not twice (BENCHMARKS.md "Scale").
            corpus, skipped = scan_corpus(corpus, data.on_bad_audio, self.cache.root / "fingerprints")
            for u in corpus.utterances:
                if (path := os.path.abspath(u.path)) not in stamps and (stamp := file_stamp(path)) is not None:
                    stamps[path] = stamp
        self.state.stamps = dict(stamps)
        for utt_id, path, reason in skipped:
            log.warning("skipped %s (%s): %s", utt_id, path, reason)
        if not corpus.fingerprint:
            corpus.fingerprint = corpus_fingerprint(corpus, self.cache.root / "fingerprints")
        settings = self.exp.plan_settings  # validated when the experiment was loaded
        plan = source.evaluation_plan(corpus, settings) or make_plan(corpus, settings)
        for note in plan.notes:
            log.warning("data plan: %s", note)
        trials_dir = self.folder / "trials"
        for n, trial_list in sorted(plan.trial_lists.items()):
            write_trials(trial_list, trials_dir / f"N{n}.trials")
            write_sides(trial_list, trials_dir / f"N{n}.sides")
        log.info(
            "data: %d utterances, %d attacker-train speakers, %d evaluation speakers, trials %s",
            len(corpus),
            len(plan.train.speakers) + (len(plan.validation.speakers) if plan.validation else 0),
            len(plan.evaluation.speakers),
            {n: len(t) for n, t in sorted(plan.trial_lists.items())},
        )
        self.state.timings["data"] = time.perf_counter() - started
        return corpus, plan, skipped

    def _anonymizer_key(self, anon: ResolvedAnonymizer, corpus: Corpus) -> str:
        payload = {
            "anonymizer": anon.identity(),
            "seed": self.settings.seed,
            "data": self.state.fingerprint,
            "utterances": stable_key([u.id for u in corpus.utterances]),
        }
        inputs = [step.input_fingerprint() for step in self._anonymizer_instances(anon)]
        if any(f is not None for f in inputs):  # only then: the keys of every other anonymizer stay as they were
            payload["inputs"] = inputs
        return self.cache.key("anonymize", payload)

    def _anonymize(self, anon: ResolvedAnonymizer, corpus: Corpus, part: str) -> Corpus:
        key = self._anonymizer_key(anon, corpus)
        label = f"{anon.label} ({part})"
        result = self._get_or_build(
            "anonymize",
            label,
            key,
            StoredSpeech(corpus),
            lambda: self._anonymize_files(anon, corpus, key, label),
            reads=[corpus],
        )
        self.state.anonymized[(anon.label, part)] = (key, result)
        return result

    def _anonymizer_instances(self, anon: ResolvedAnonymizer) -> list[Anonymizer]:
        """The chain's plugin instances, created once per run and not yet prepared."""
        steps = self.state.anonymizers.get(anon.label)
        if steps is None:
            steps = [self._instantiate(s, "anonymizer-" + s.use, stable_key(s.identity())[:16]) for s in anon.steps]
            self.state.anonymizers[anon.label] = steps
        return steps

    def _anonymizer_steps(self, anon: ResolvedAnonymizer) -> list[Anonymizer]:
        """The chain's instances, prepared (once per run)."""
        steps = self._anonymizer_instances(anon)
        if anon.label not in self.state.prepared:
            for step in steps:
                step.prepare()
            self.state.prepared.add(anon.label)
        return steps

    def _anonymize_files(self, anon: ResolvedAnonymizer, corpus: Corpus, key: str, label: str) -> SpeechFiles:
        """One anonymized file per utterance in the entry's partial folder; what a killed run wrote is kept."""
        steps = self._anonymizer_steps(anon)
        for step in steps:
            step.expect(corpus.utterances)  # refusals come before any audio is processed
        partial = self.cache.partial_path("anonymize", key)
        entries = [{"id": u.id, "file": utterance_file(u.id)} for u in corpus.utterances]
        todo = [u for u, e in zip(corpus.utterances, entries) if not (partial / e["file"]).exists()]
        # A picklable task: forked workers use these prepared steps, cluster workers rebuild the chain.
        task = AnonymizeTask(
            anon,
            self.settings.seed,
            self.settings.threads,
            self.cache.root,
            partial,
            {"allow_pipes": self.allow_pipes, "cache_root": self.cache.root},
            self.device,
            self.precision,
        )
        task.remember(steps)
        console = self.state.console
        if len(todo) < len(entries):
            console.log.info(
                "anonymize %s: resuming, %d of %d utterances already done",
                label,
                len(entries) - len(todo),
                len(entries),
            )
        try:
            results = self.state.executor.map(task, todo, f"anonymize {label}")
            for _ in console.track(results, total=len(todo), description=f"anonymize {label}"):
                pass
        finally:
            task.forget()
        return SpeechFiles(partial, entries)

    def _voice_rng(self, anon: ResolvedAnonymizer, step: int, key: str) -> np.random.Generator:
        return voice_rng(self.settings.seed, step, key)

    def _frontend(self, att: ResolvedAttacker, train: Corpus) -> Frontend:
        assert att.frontend is not None
        key = self.cache.key(
            "frontend",
            {
                "frontend": att.frontend.identity(),
                "seed": self.settings.seed,
                "data": self.state.fingerprint,
                "train": stable_key([u.id for u in train.utterances]),
            },
        )
        frontend = self._instantiate(att.frontend, "frontend-" + att.frontend.use, key[:16])

        def fit() -> Frontend:
            frontend.fit(train)
            return frontend

        return self._get_or_build("frontend", att.frontend.label, key, StoredPlugin(frontend), fit, reads=[train])

    def _training_data(
        self, att: ResolvedAttacker, system: ResolvedAnonymizer | None
    ) -> tuple[TrainingData, list[str]]:
        plan, state = self.state.plan, self.state
        if system is None:
            stages = [TrainingStage("original", plan.train, "original")]
            keys = [stable_key([state.fingerprint, [u.id for u in plan.train.utterances]])]
            validation = plan.validation
        else:
            train = self._anonymize(system, plan.train, "train")
            stages = [TrainingStage(system.label, train, system.label)]
            keys = [state.anonymized[(system.label, "train")][0]]
            validation = self._anonymize(system, plan.validation, "validation") if plan.validation is not None else None
        if validation is not None:
            keys.append(
                stable_key([u.id for u in validation.utterances])
                if system is None
                else state.anonymized[(system.label, "validation")][0]
            )
        return TrainingData(stages, validation, att.train_on), keys

    def _train(
        self, att: ResolvedAttacker, system: ResolvedAnonymizer | None, frontend: Frontend | None
    ) -> tuple[Attacker, str]:
        cls = self.manager.get("attacker", att.plugin.use)
        identity = {"attacker": att.plugin.identity(), "frontend": att.frontend.identity() if att.frontend else None}
        label = att.label + (f" on {system.label}" if system else "")
        if not cls.needs_training:
            key = self.cache.key("train", {**identity, "pretrained": True})
            attacker = self._instantiate(att.plugin, "attacker-" + att.plugin.use, key[:16])
            attacker.frontend = frontend
            return attacker, key
        data, data_keys = self._training_data(att, system)
        start_key = None
        if att.init_from is not None:
            ref = next(a for a in self.exp.attackers if a.label == att.init_from)
            _, start_key = self._train(ref, system if ref.train_on == "anonymized" else None, frontend)
        key = self.cache.key(
            "train", {**identity, "seed": self.settings.seed, "data": data_keys, "init_from": start_key}
        )
        attacker = self._instantiate(att.plugin, "attacker-" + att.plugin.use, key[:16])
        attacker.frontend = frontend

        def train() -> Attacker:
            if start_key is not None:
                attacker.init_from(self.cache.path("train", start_key))
            attacker.train(data)
            return attacker

        return self._get_or_build("train", label, key, StoredPlugin(attacker), train), key

    def _side_corpora(self, protocol: str, anonymized: Corpus | None) -> tuple[Corpus, Corpus]:
        original = self.state.plan.evaluation
        if protocol == "O-O":
            return original, original
        assert anonymized is not None
        return (original, anonymized) if protocol == "O-A" else (anonymized, anonymized)

    def _score(
        self, att, attacker: Attacker, train_key: str, anon: ResolvedAnonymizer | None, plan, anonymized_eval
    ) -> list[ScoreSet]:
        out = []
        for protocol in self.settings.protocols:
            if protocol != "O-O" and anon is None:
                continue
            anon_key = (
                self.state.anonymized[(anon.label, "evaluation")][0] if anon is not None and protocol != "O-O" else None
            )
            for n, trial_list in sorted(plan.trial_lists.items()):
                key = self.cache.key(
                    "score",
                    {
                        "train": train_key,
                        "protocol": protocol,
                        "anonymized": anon_key,
                        "data": self.state.fingerprint,
                        "trials": _trials_key(trial_list),
                    },
                )
                label = f"{att.label} {protocol} N={n}" + (f" vs {anon.label}" if anon else "")

                def score(protocol=protocol, trial_list=trial_list, anon_key=anon_key) -> Scores:
                    enroll_corpus, test_corpus = self._side_corpora(
                        protocol, anonymized_eval.get(anon.label) if anon else None
                    )
                    return self._score_trials(
                        attacker, train_key, trial_list, enroll_corpus, test_corpus, anon_key, protocol
                    )

                scores = self._get_or_build("score", label, key, StoredScores, score, reads=[plan.evaluation])
                out.append(ScoreSet(anon.label if anon else "none", att.label, att.train_on, protocol, n, scores, key))
        return out

    def _score_trials(
        self, attacker, train_key, trial_list: TrialList, enroll_corpus, test_corpus, anon_key, protocol
    ) -> Scores:
        enroll_version = anon_key if protocol == "A-A" else None
        test_version = anon_key if protocol in ("O-A", "A-A") else None
        trials = trial_list.trials
        enroll = represent_sides(
            attacker, self._remembered(train_key, enroll_version), [t.enroll for t in trials], enroll_corpus
        )
        test = represent_sides(
            attacker, self._remembered(train_key, test_version), [t.test for t in trials], test_corpus
        )
        return trial_scores(trials, attacker.score(enroll, test))

    def _remembered(self, train_key: str, version: str | None) -> VectorTable:
        """The side vectors of one trained attacker on one version of the speech (None: the original)."""
        return self.state.represented.setdefault((train_key, version), VectorTable(np.float64))

    # -- metrics -----------------------------------------------------------------------------
    # One builder per `needs` (METRIC_INPUTS, below the class): each gives the rows of one metric plugin
    # from what the run has made so far (a MetricScope).

    def _metrics(self, needs: str) -> list[ResolvedPlugin]:
        return [m for m in self.exp.metrics if self.manager.get("metric", m.use).needs == needs]

    def _refuse_unknown_metric_inputs(self) -> None:
        """A metric whose `needs` no builder provides would silently give no rows: refuse it before any work."""
        for m in self.exp.metrics:
            cls = self.manager.get("metric", m.use)
            if cls.needs not in METRIC_INPUTS:
                raise PluginError(
                    f"metric {m.use} reads '{cls.needs}', which vpeval does not provide (a metric "
                    f"reads one of: {', '.join(METRIC_INPUTS)}); this is a bug in {cls.distribution} "
                    f"{cls.version}: report it to its authors."
                )

    def _attacker_metric_rows(self, scope: MetricScope) -> list[dict[str, Any]]:
        """The rows of the per-attacker metric kinds for the trained attacker in `scope`, kinds in table order."""
        return [
            row
            for needs, kind in METRIC_INPUTS.items()
            if kind.per_attacker
            for plugin in self._metrics(needs)
            for row in kind.rows(self, plugin, scope)
        ]

    def _metric_rows(self, scope: MetricScope, attacker_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every metric row, in table order; the per-attacker kinds' rows (computed while each attacker was in
        memory, `attacker_rows`) stand together at the place of the first of them, in the order attackers trained."""
        rows: list[dict[str, Any]] = []
        for needs, kind in METRIC_INPUTS.items():
            if kind.per_attacker:
                rows, attacker_rows = rows + attacker_rows, []
            else:
                rows += [row for plugin in self._metrics(needs) for row in kind.rows(self, plugin, scope)]
        return rows

    def _metric_results(
        self,
        plugin: ResolvedPlugin,
        label: str,
        inputs_key: dict[str, Any],
        coords: dict[str, Any],
        inputs: Callable[[], MetricInputs],
    ) -> list[MetricResult]:
        """A metric's results, cached like any stage under its identity, the seed (bootstrap draws), the
        coordinates it is given and the keys of its inputs."""
        key = self.cache.key(
            "metrics",
            {"metric": plugin.identity(), "seed": self.settings.seed, "inputs": inputs_key, "attributes": coords},
        )

        def compute() -> list[MetricResult]:
            metric = self.state.metrics.get(plugin.label)
            if metric is None:
                metric = self.state.metrics[plugin.label] = self._instantiate(
                    plugin, "metric-" + plugin.use, stable_key(plugin.identity())[:16]
                )
            return metric.compute(inputs())

        return self._get_or_build(
            "metrics",
            f"{plugin.label} on {label}",
            key,
            StoredMetricResults,
            compute,
            reads=[self.state.plan.evaluation],
        )

    def _score_metric_rows(self, plugin: ResolvedPlugin, scope: MetricScope) -> list[dict[str, Any]]:
        """needs "scores": once per score set (attacker, protocol, N, anonymizer)."""
        rows = []
        for s in scope.score_sets:
            coords = {
                "anonymizer": s.anonymizer,
                "attacker": s.attacker,
                "scenario": s.scenario,
                "protocol": s.protocol,
                "n": s.n,
            }
            label = f"{s.attacker} {s.protocol} N={s.n} vs {s.anonymizer}"
            results = self._metric_results(
                plugin,
                label,
                {"scores": s.key},
                coords,
                lambda s=s, coords=coords: MetricInputs(scores=s.scores, attributes=coords),
            )
            rows += [_row(coords, plugin, r) for r in results]
            # Several evaluation sets (VoicePrivacy's libri_dev and libri_test): each set's own rows too, as the
            # challenge reports them, with a `dataset` coordinate; the rows above pool the sets.
            for subset in s.scores.subset_names():
                mask = np.asarray(s.scores.subsets) == subset
                part = {**coords, "dataset": subset}
                results = self._metric_results(
                    plugin,
                    f"{label} on {subset}",
                    {"scores": s.key},
                    part,
                    lambda s=s, mask=mask, part=part: MetricInputs(scores=s.scores.select(mask), attributes=part),
                )
                rows += [_row(part, plugin, r) for r in results]
        return rows

    def _speech_metric_rows(self, plugin: ResolvedPlugin, scope: MetricScope) -> list[dict[str, Any]]:
        """needs "speech": once per anonymizer, the original and anonymized evaluation speech (rows about the
        original speech once, not once per anonymizer)."""
        rows: list[dict[str, Any]] = []
        original = scope.plan.evaluation
        original_key = stable_key([self.state.fingerprint, [u.id for u in original.utterances]])
        seen_original: set[tuple] = set()
        for anon in list(self.exp.anonymizers) or [None]:
            anonymized = scope.anonymized.get(anon.label) if anon else None
            anonymized_key = self.state.anonymized[(anon.label, "evaluation")][0] if anon else None
            coords = {
                "anonymizer": anon.label if anon else "original",
                "attacker": "",
                "scenario": "",
                "protocol": "",
                "n": None,
            }
            results = self._metric_results(
                plugin,
                coords["anonymizer"],
                {"original": original_key, "anonymized": anonymized_key},
                coords,
                lambda anonymized=anonymized, coords=coords: MetricInputs(
                    original=original, anonymized=anonymized, attributes=coords
                ),
            )
            for r in results:
                c = dict(coords)
                if r.details.get("speech") == "original":
                    c["anonymizer"] = "original"
                    sig = (plugin.label, r.metric, r.gender, json.dumps(r.details.get("class"), default=str))
                    if sig in seen_original:
                        continue
                    seen_original.add(sig)
                rows.append(_row(c, plugin, r))
        return rows

    def _similarity_metric_rows(self, plugin: ResolvedPlugin, scope: MetricScope) -> list[dict[str, Any]]:
        """needs "similarity": utterance-by-utterance score matrices (enrollment pool x trial pool) for GVD-like
        metrics, once per anonymizer the trained attacker is evaluated on."""
        trained, plan = scope.trained, scope.plan
        assert trained is not None
        att, attacker, train_key = trained.spec, trained.model, trained.key
        rows_ids = [(i,) for i in plan.enroll_ids]
        cols_ids = [(i,) for i in plan.test_ids]
        rows = []
        for anon in self.exp.anonymizers:
            if att.train_on == "anonymized" and anon is not trained.system:
                continue
            anonymized = scope.anonymized[anon.label]
            anon_key = self.state.anonymized[(anon.label, "evaluation")][0]
            coords = {"anonymizer": anon.label, "attacker": att.label, "scenario": att.train_on, "protocol": "", "n": 1}

            def matrices(anonymized=anonymized, anon_key=anon_key, coords=coords) -> MetricInputs:
                out = {}
                for protocol in ("O-O", "O-A", "A-A"):
                    enroll_corpus, test_corpus = self._side_corpora(protocol, anonymized)
                    ev = anon_key if protocol == "A-A" else None
                    tv = anon_key if protocol != "O-O" else None
                    r = represent_sides(attacker, self._remembered(train_key, ev), rows_ids, enroll_corpus)
                    c = represent_sides(attacker, self._remembered(train_key, tv), cols_ids, test_corpus)
                    grid = attacker.score(np.repeat(r, len(c), axis=0), np.tile(c, (len(r), 1))).reshape(len(r), len(c))
                    out[protocol] = SimilarityMatrix(
                        grid,
                        np.array([plan.evaluation[i[0]].speaker for i in rows_ids]),
                        np.array([plan.evaluation[i[0]].speaker for i in cols_ids]),
                        np.array([i[0] for i in rows_ids]),
                        np.array([i[0] for i in cols_ids]),
                    )
                return MetricInputs(similarity=out, attributes=coords)

            inputs_key = {
                "train": train_key,
                "anonymized": anon_key,
                "data": self.state.fingerprint,
                "pools": stable_key([plan.enroll_ids, plan.test_ids]),
            }
            results = self._metric_results(plugin, f"{att.label} vs {anon.label}", inputs_key, coords, matrices)
            rows += [_row(coords, plugin, r) for r in results]
        return rows

    def _embedding_metric_rows(self, plugin: ResolvedPlugin, scope: MetricScope) -> list[dict[str, Any]]:
        """needs "embeddings": recovered against true speaker embeddings, for attackers that recover them.

        Protocol "O": recovered from the original evaluation speech; "A": from an anonymizer's version of it.
        The targets always come from the original speech of the same utterance.
        """
        trained, plan = scope.trained, scope.plan
        assert trained is not None
        att, attacker, train_key, system = trained.spec, trained.model, trained.key, trained.system
        if not attacker.recovers_embeddings():
            return []
        versions: list[tuple[str, ResolvedAnonymizer | None]] = [("O", None)] if system is None else []
        versions += [("A", anon) for anon in self.exp.anonymizers if system is None or anon is system]
        rows = []
        for protocol, anon in versions:
            observed = scope.anonymized[anon.label] if anon is not None else plan.evaluation
            anon_key = self.state.anonymized[(anon.label, "evaluation")][0] if anon is not None else None
            coords = {
                "anonymizer": anon.label if anon else "none",
                "attacker": att.label,
                "scenario": att.train_on,
                "protocol": protocol,
                "n": 1,
            }

            def inputs(observed=observed, coords=coords) -> MetricInputs:
                recovered, target, speakers = attacker.inversion_embeddings(observed, plan.evaluation)
                chosen = attacker.inversion_pairs(observed)  # rows in `observed` order, as the embeddings'
                pairs, note = chosen if chosen is not None else (None, "")
                return MetricInputs(
                    recovered=recovered,
                    target=target,
                    speakers=speakers,
                    pairs=pairs,
                    pairs_note=note,
                    attributes=coords,
                )

            inputs_key = {
                "train": train_key,
                "anonymized": anon_key,
                "data": self.state.fingerprint,
                "utterances": stable_key([u.id for u in plan.evaluation.utterances]),
            }
            label = f"{att.label} {protocol}" + (f" vs {anon.label}" if anon else "")
            rows += [_row(coords, plugin, r) for r in self._metric_results(plugin, label, inputs_key, coords, inputs)]
        return rows


@dataclass(frozen=True)
class TrainedAttacker:
    """One trained attack model as the per-attacker metric kinds see it."""

    spec: ResolvedAttacker
    model: Attacker
    key: str  # its train stage's cache key
    system: ResolvedAnonymizer | None  # the anonymizer it trained on (train_on: anonymized); None: original speech


@dataclass(frozen=True)
class MetricScope:
    """What a metric input builder reads: the plan, the anonymized evaluation speech by anonymizer label, and
    either every score set of the run (after the attacks) or one trained attacker (while it is in memory)."""

    plan: EvaluationPlan
    anonymized: dict[str, Corpus]
    score_sets: list[ScoreSet] = field(default_factory=list)
    trained: TrainedAttacker | None = None


@dataclass(frozen=True)
class MetricInputKind:
    """How the runner builds the inputs of the metrics of one `needs`."""

    rows: Callable[[Runner, ResolvedPlugin, MetricScope], list[dict[str, Any]]]  # one metric plugin's rows
    per_attacker: bool  # once per trained attacker (MetricScope.trained), else once per run after the attacks
    reads_anonymized: bool  # it reads the anonymized evaluation speech, even when no protocol scores it


# needs -> its builder: a new kind of metric input is one entry (and one MetricInputs field). The order is
# the order of the result rows (see Runner._metric_rows).
METRIC_INPUTS: dict[str, MetricInputKind] = {
    "scores": MetricInputKind(Runner._score_metric_rows, per_attacker=False, reads_anonymized=False),
    "similarity": MetricInputKind(Runner._similarity_metric_rows, per_attacker=True, reads_anonymized=True),
    "embeddings": MetricInputKind(Runner._embedding_metric_rows, per_attacker=True, reads_anonymized=True),
    "speech": MetricInputKind(Runner._speech_metric_rows, per_attacker=False, reads_anonymized=True),
}


def _row(coords: dict[str, Any], plugin: ResolvedPlugin, r) -> dict[str, Any]:
    return {
        **coords,
        "metric": r.metric,
        "metric_plugin": plugin.label,
        "gender": r.gender,
        "value": _num(r.value),
        "ci_low": _num(r.ci_low),
        "ci_high": _num(r.ci_high),
        "unit": r.unit,
        "details": r.details,
    }


def _num(x):
    if x is None:
        return None
    x = float(x)
    return None if np.isnan(x) else x


def _trials_key(trial_list: TrialList) -> str:
    # The subset joins the key only where there is one, so the keys of one-set plans stay as they were.
    return stable_key(
        [trial_list.n, [(t.enroll, t.test, t.target) + ((t.subset,) if t.subset else ()) for t in trial_list.trials]]
    )
