"""The staged runner: data -> anonymize -> frontend -> attack (train, represent, score) -> metrics -> report.

Every stage output is cached under a content key (see cache.py), so changing one attacker reruns only
that attacker and a killed run resumes where it stopped with the same numbers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vpeval.api import Anonymizer, Attacker, Frontend, Metric, MetricInputs, Plugin, PluginContext, SimilarityMatrix, Voice
from vpeval.config import ResolvedAnonymizer, ResolvedAttacker, ResolvedExperiment, ResolvedPlugin
from vpeval.plugins import get_plugin_manager
from vpeval.run.cache import StageCache, stable_key
from vpeval.run.console import RunConsole
from vpeval.run.executor import LocalExecutor
from vpeval.types import Corpus, Scores, TrainingData, TrainingStage, TrialList, Utterance

CACHE_ENV = "VPEVAL_CACHE"


def default_cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV, ".vpeval-cache"))


@dataclass
class ScoreSet:
    anonymizer: str
    attacker: str
    scenario: str
    protocol: str
    n: int
    scores: Scores


@dataclass
class RunResult:
    folder: Path
    rows: list[dict[str, Any]]
    timings: dict[str, float] = field(default_factory=dict)
    executed: dict[str, list[str]] = field(default_factory=dict)  # stage -> labels computed (not reused)
    skipped_audio: list[tuple[str, str, str]] = field(default_factory=list)
    anonymized: dict[str, Corpus] = field(default_factory=dict)  # anonymizer label -> evaluation speech


class Runner:
    """Runs one resolved experiment. `force` names stages to recompute; no_cache uses a throwaway cache."""

    def __init__(
        self,
        experiment: ResolvedExperiment,
        cache_root: str | Path | None = None,
        force: Sequence[str] = (),
        no_cache: bool = False,
        quiet: bool = False,
    ):
        self.exp = experiment
        self.settings = experiment.experiment
        self.folder = experiment.output
        self._tmp_cache = Path(tempfile.mkdtemp(prefix="vpeval-nocache-")) if no_cache else None
        self.cache = StageCache(self._tmp_cache or cache_root or default_cache_root(), set(force))
        self.quiet = quiet
        self.manager = get_plugin_manager()
        self.timings: dict[str, float] = {}
        self.executed: dict[str, list[str]] = {}
        self._anonymized: dict[tuple[str, str], tuple[str, Corpus]] = {}
        self._anonymizer_instances: dict[str, list[Anonymizer]] = {}
        self._represent_memo: dict[tuple, np.ndarray] = {}

    # -- plumbing ----------------------------------------------------------------------------

    def _context(self, *parts: str) -> PluginContext:
        return PluginContext(
            seed=self.settings.seed,
            work_dir=self.cache.root / "work" / Path(*parts),
            threads=self.settings.threads,
            log=self.console.log.getChild(parts[-1] if parts else "plugin"),
            plugin_factory=self._make_helper,
            progress_factory=self.console.track,
            options={"allow_pipes": self.settings.data.allow_pipes, "cache_root": self.cache.root},
        )

    def _instantiate(self, plugin: ResolvedPlugin, *work: str) -> Plugin:
        cls = self.manager.get(plugin.kind, plugin.use)
        context = self._context(*(work or (f"{plugin.kind}-{plugin.use}", stable_key(plugin.identity())[:16])))
        instance = cls(cls.Params.model_validate(plugin.params), context)
        context.apply_threads()
        return instance

    def _make_helper(self, kind: str, name: str, params: dict | None) -> Plugin:
        cls = self.manager.get(kind, name)
        validated = cls.Params.model_validate(params or {})
        identity = {"kind": kind, "use": name, "params": validated.model_dump(mode="json"), "version": cls.version}
        return cls(validated, self._context(f"{kind}-{name}", stable_key(identity)[:16]))

    def _timed(self, stage: str, label: str, started: float) -> None:
        took = time.perf_counter() - started
        self.timings[f"{stage}:{label}"] = self.timings.get(f"{stage}:{label}", 0.0) + took
        self.executed.setdefault(stage, []).append(label)
        self.console.log.info("%s %s: computed in %.1f s", stage, label, took)

    def _reused(self, stage: str, label: str, key: str) -> None:
        self.console.log.info("%s %s: reused from cache (key %s)", stage, label, key[:12])

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> RunResult:
        self.folder.mkdir(parents=True, exist_ok=True)
        with RunConsole(self.folder / "run.log", quiet=self.quiet) as console:
            self.console = console
            try:
                console.log.info("run %s -> %s (cache %s)", self.settings.name, self.folder, self.cache.root)
                return self._run()
            finally:
                if self._tmp_cache is not None:
                    shutil.rmtree(self._tmp_cache, ignore_errors=True)

    def _run(self) -> RunResult:
        from vpeval.report.writer import write_outputs

        started = time.perf_counter()
        corpus, plan, skipped = self._data()
        self.plan = plan
        self.fingerprint = corpus.fingerprint
        score_sets: list[ScoreSet] = []
        speech_rows: list[dict[str, Any]] = []
        needs_train_anon = {a.label for a in self.exp.anonymizers} if any(
            att.train_on == "anonymized" for att in self.exp.attackers
        ) else set()
        anonymized_eval: dict[str, Corpus] = {}
        for anon in self.exp.anonymizers:
            if {"O-A", "A-A"} & set(self.settings.protocols) or self._speech_metrics():
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
                for anon in self.exp.anonymizers or [None]:
                    if att.train_on == "anonymized" and anon is not system:
                        continue
                    score_sets += self._score(att, attacker, train_key, anon, plan, anonymized_eval)
                for metric in self._metrics("similarity"):
                    for anon in self.exp.anonymizers:
                        if att.train_on == "anonymized" and anon is not system:
                            continue
                        speech_rows += self._similarity_metric(metric, att, attacker, train_key, anon, plan, anonymized_eval[anon.label])

        rows = self._score_metrics(score_sets) + speech_rows + self._speech_metric_rows(plan, anonymized_eval)
        self.timings["total"] = time.perf_counter() - started
        result = RunResult(self.folder, rows, self.timings, self.executed, skipped, anonymized_eval)
        write_outputs(self.exp, result, plan, score_sets)
        self.console.log.info("results: %s", self.folder / "results.json")
        return result

    # -- stages ------------------------------------------------------------------------------

    def _data(self):
        from vpeval.data.fingerprint import corpus_fingerprint
        from vpeval.data.plan import PlanSettings, make_plan, write_sides, write_trials
        from vpeval.data.scan import scan_corpus

        started = time.perf_counter()
        data = self.settings.data
        source = self._instantiate(self.exp.corpus, "corpus-" + self.exp.corpus.use)
        corpus = source.load()
        corpus, skipped = scan_corpus(corpus, data.on_bad_audio, self.cache.root / "fingerprints")
        for utt_id, path, reason in skipped:
            self.console.log.warning("skipped %s (%s): %s", utt_id, path, reason)
        if not corpus.fingerprint:
            corpus.fingerprint = corpus_fingerprint(corpus, self.cache.root / "fingerprints")
        settings = PlanSettings(
            seed=self.settings.seed,
            attacker_train_speakers=data.attacker_train_speakers,
            validation_speakers=data.validation_speakers,
            enroll_utterances=list(self.settings.enroll_utterances),
            enroll_share=data.enroll_share,
            target_trials_per_speaker=data.target_trials_per_speaker,
            nontarget_trials_per_speaker=data.nontarget_trials_per_speaker,
            same_gender_nontargets=data.same_gender_nontargets,
            gender_balanced_split=data.gender_balanced_split,
        )
        plan = source.evaluation_plan(corpus, settings) or make_plan(corpus, settings)
        for note in plan.notes:
            self.console.log.warning("data plan: %s", note)
        trials_dir = self.folder / "trials"
        for n, trial_list in sorted(plan.trial_lists.items()):
            write_trials(trial_list, trials_dir / f"N{n}.trials")
            write_sides(trial_list, trials_dir / f"N{n}.sides")
        self.console.log.info(
            "data: %d utterances, %d attacker-train speakers, %d evaluation speakers, trials %s",
            len(corpus),
            len(plan.train.speakers) + (len(plan.validation.speakers) if plan.validation else 0),
            len(plan.evaluation.speakers),
            {n: len(t) for n, t in sorted(plan.trial_lists.items())},
        )
        self.timings["data"] = time.perf_counter() - started
        return corpus, plan, skipped

    def _speech_metrics(self) -> list[Metric]:
        return self._metrics("speech")

    def _metrics(self, needs: str) -> list[tuple[ResolvedPlugin, type[Metric]]]:
        out = []
        for m in self.exp.metrics:
            cls = self.manager.get("metric", m.use)
            if cls.needs == needs:
                out.append((m, cls))
        return out

    def _anonymizer_key(self, anon: ResolvedAnonymizer, corpus: Corpus) -> str:
        return self.cache.key(
            "anonymize",
            {
                "anonymizer": anon.identity(),
                "seed": self.settings.seed,
                "data": self.fingerprint,
                "utterances": stable_key([u.id for u in corpus.utterances]),
            },
        )

    def _anonymize(self, anon: ResolvedAnonymizer, corpus: Corpus, part: str) -> Corpus:
        from vpeval.data.audio import resample, write_audio

        key = self._anonymizer_key(anon, corpus)
        label = f"{anon.label} ({part})"
        final = self.cache.path("anonymize", key)
        if self.cache.exists("anonymize", key):
            self._reused("anonymize", label, key)
            result = _read_anonymized(final, corpus)
            self._anonymized[(anon.label, part)] = (key, result)
            return result
        started = time.perf_counter()
        steps = self._anonymizer_instances.get(anon.label)
        if steps is None:
            steps = [self._instantiate(s, "anonymizer-" + s.use, stable_key(s.identity())[:16]) for s in anon.steps]
            for step in steps:
                step.prepare()
            self._anonymizer_instances[anon.label] = steps
        partial = self.cache.partial_path("anonymize", key)
        entries = [{"id": u.id, "file": _safe_name(u.id) + ".wav"} for u in corpus.utterances]
        todo = [u for u, e in zip(corpus.utterances, entries) if not (partial / e["file"]).exists()]

        def anonymize_one(utt: Utterance) -> str:
            rate = steps[0].sample_rate or utt.sample_rate or _file_rate(utt.path)
            audio = utt.load(rate)
            for index, step in enumerate(steps):
                if step.sample_rate and step.sample_rate != rate:
                    audio, rate = resample(audio, rate, step.sample_rate), step.sample_rate
                voice_key = utt.id if anon.level == "utterance" else utt.speaker
                voice = Voice(voice_key, anon.level, self._voice_rng(anon, index, voice_key), utt)
                audio = np.asarray(step.anonymize(audio, rate, voice), dtype=np.float32)
            write_audio(partial / (_safe_name(utt.id) + ".wav"), audio, rate)
            return utt.id

        if len(todo) < len(entries):
            self.console.log.info("anonymize %s: resuming, %d of %d utterances already done", label, len(entries) - len(todo), len(entries))
        results = LocalExecutor(self.settings.workers).map(anonymize_one, todo)
        for _ in self.console.track(results, total=len(todo), description=f"anonymize {label}"):
            pass
        with self.cache.build("anonymize", key) as tmp:
            for entry in entries:
                os.replace(partial / entry["file"], tmp / entry["file"])
            (tmp / "manifest.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
        result = _read_anonymized(final, corpus)
        self._anonymized[(anon.label, part)] = (key, result)
        self._timed("anonymize", label, started)
        return result

    def _voice_rng(self, anon: ResolvedAnonymizer, step: int, key: str) -> np.random.Generator:
        from vpeval.api import stable_int

        return np.random.default_rng([self.settings.seed & 0xFFFFFFFF, stable_int("voice", step, key)])

    def _frontend(self, att: ResolvedAttacker, train: Corpus) -> Frontend:
        assert att.frontend is not None
        key = self.cache.key(
            "frontend",
            {"frontend": att.frontend.identity(), "seed": self.settings.seed, "data": self.fingerprint,
             "train": stable_key([u.id for u in train.utterances])},
        )
        frontend = self._instantiate(att.frontend, "frontend-" + att.frontend.use, key[:16])
        if self.cache.exists("frontend", key):
            frontend.load(self.cache.path("frontend", key))
            self._reused("frontend", att.frontend.label, key)
            return frontend
        started = time.perf_counter()
        frontend.fit(train)
        with self.cache.build("frontend", key) as tmp:
            frontend.save(tmp)
        self._timed("frontend", att.frontend.label, started)
        return frontend

    def _training_data(self, att: ResolvedAttacker, system: ResolvedAnonymizer | None) -> tuple[TrainingData, list[str]]:
        plan = self.plan
        if system is None:
            stages = [TrainingStage("original", plan.train, "original")]
            keys = [stable_key([self.fingerprint, [u.id for u in plan.train.utterances]])]
            validation = plan.validation
        else:
            train = self._anonymize(system, plan.train, "train")
            stages = [TrainingStage(system.label, train, system.label)]
            keys = [self._anonymized[(system.label, "train")][0]]
            validation = self._anonymize(system, plan.validation, "validation") if plan.validation is not None else None
        if validation is not None:
            keys.append(stable_key([u.id for u in validation.utterances]) if system is None else self._anonymized[(system.label, "validation")][0])
        return TrainingData(stages, validation, att.train_on), keys

    def _train(self, att: ResolvedAttacker, system: ResolvedAnonymizer | None, frontend: Frontend | None) -> tuple[Attacker, str]:
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
        key = self.cache.key("train", {**identity, "seed": self.settings.seed, "data": data_keys, "init_from": start_key})
        attacker = self._instantiate(att.plugin, "attacker-" + att.plugin.use, key[:16])
        attacker.frontend = frontend
        if self.cache.exists("train", key):
            attacker.load(self.cache.path("train", key))
            self._reused("train", label, key)
            return attacker, key
        started = time.perf_counter()
        if start_key is not None:
            attacker.init_from(self.cache.path("train", start_key))
        attacker.train(data)
        with self.cache.build("train", key) as tmp:
            attacker.save(tmp)
        self._timed("train", label, started)
        return attacker, key

    def _side_corpora(self, protocol: str, anonymized: Corpus | None) -> tuple[Corpus, Corpus]:
        original = self.plan.evaluation
        if protocol == "O-O":
            return original, original
        assert anonymized is not None
        return (original, anonymized) if protocol == "O-A" else (anonymized, anonymized)

    def _score(self, att, attacker: Attacker, train_key: str, anon: ResolvedAnonymizer | None, plan, anonymized_eval) -> list[ScoreSet]:
        out = []
        for protocol in self.settings.protocols:
            if protocol != "O-O" and anon is None:
                continue
            anon_key = self._anonymized[(anon.label, "evaluation")][0] if anon is not None and protocol != "O-O" else None
            for n, trial_list in sorted(plan.trial_lists.items()):
                key = self.cache.key(
                    "score",
                    {"train": train_key, "protocol": protocol, "anonymized": anon_key, "data": self.fingerprint,
                     "trials": _trials_key(trial_list)},
                )
                label = f"{att.label} {protocol} N={n}" + (f" vs {anon.label}" if anon else "")
                if self.cache.exists("score", key):
                    scores = _load_scores(self.cache.path("score", key))
                    self._reused("score", label, key)
                else:
                    started = time.perf_counter()
                    enroll_corpus, test_corpus = self._side_corpora(protocol, anonymized_eval.get(anon.label) if anon else None)
                    scores = self._score_trials(attacker, train_key, trial_list, enroll_corpus, test_corpus, anon_key, protocol)
                    with self.cache.build("score", key) as tmp:
                        _save_scores(tmp, scores)
                    self._timed("score", label, started)
                out.append(ScoreSet(anon.label if anon else "none", att.label, att.train_on, protocol, n, scores))
        return out

    def _represent(self, attacker: Attacker, train_key: str, sides: list[tuple[str, ...]], corpus: Corpus, version: str | None) -> np.ndarray:
        missing = [s for s in dict.fromkeys(sides) if (train_key, version, s) not in self._represent_memo]
        if missing:
            vectors = attacker.represent_many([[corpus[i] for i in side] for side in missing])
            for side, vec in zip(missing, vectors):
                self._represent_memo[(train_key, version, side)] = np.asarray(vec, dtype=np.float64)
        return np.stack([self._represent_memo[(train_key, version, s)] for s in sides])

    def _score_trials(self, attacker, train_key, trial_list: TrialList, enroll_corpus, test_corpus, anon_key, protocol) -> Scores:
        enroll_version = anon_key if protocol == "A-A" else None
        test_version = anon_key if protocol in ("O-A", "A-A") else None
        trials = trial_list.trials
        enroll = self._represent(attacker, train_key, [t.enroll for t in trials], enroll_corpus, enroll_version)
        test = self._represent(attacker, train_key, [t.test for t in trials], test_corpus, test_version)
        values = np.asarray(attacker.score(enroll, test), dtype=np.float64)
        return Scores(
            values,
            np.array([t.target for t in trials]),
            np.array([t.gender or "" for t in trials]),
            np.array([t.enroll_speaker for t in trials]),
            np.array([t.test_speaker for t in trials]),
            np.array([t.enroll_id for t in trials]),
            np.array([t.test_id for t in trials]),
        )

    # -- metrics -----------------------------------------------------------------------------

    def _metric_instance(self, plugin: ResolvedPlugin) -> Metric:
        return self._instantiate(plugin, "metric-" + plugin.use, stable_key(plugin.identity())[:16])

    def _score_metrics(self, score_sets: list[ScoreSet]) -> list[dict[str, Any]]:
        rows = []
        for plugin, _cls in self._metrics("scores"):
            metric = self._metric_instance(plugin)
            for s in score_sets:
                coords = {"anonymizer": s.anonymizer, "attacker": s.attacker, "scenario": s.scenario, "protocol": s.protocol, "n": s.n}
                for r in metric.compute(MetricInputs(scores=s.scores, attributes=coords)):
                    rows.append(_row(coords, plugin, r))
        return rows

    def _speech_metric_rows(self, plan, anonymized_eval: dict[str, Corpus]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        original = plan.evaluation
        seen_original: set[tuple] = set()
        for plugin, _cls in self._metrics("speech"):
            metric = self._metric_instance(plugin)
            started = time.perf_counter()
            targets = list(self.exp.anonymizers) or [None]
            for anon in targets:
                anonymized = anonymized_eval.get(anon.label) if anon else None
                coords = {"anonymizer": anon.label if anon else "original", "attacker": "", "scenario": "", "protocol": "", "n": None}
                for r in metric.compute(MetricInputs(original=original, anonymized=anonymized, attributes=coords)):
                    c = dict(coords)
                    if r.details.get("speech") == "original":
                        c["anonymizer"] = "original"
                        sig = (plugin.label, r.metric, r.gender, json.dumps(r.details.get("class"), default=str))
                        if sig in seen_original:
                            continue
                        seen_original.add(sig)
                    rows.append(_row(c, plugin, r))
            self._timed("metrics", plugin.label, started)
        return rows

    def _similarity_metric(self, metric_entry, att, attacker, train_key: str, anon, plan, anonymized: Corpus) -> list[dict[str, Any]]:
        """Utterance-by-utterance score matrices (enrollment pool x trial pool) for GVD-like metrics."""
        plugin, _cls = metric_entry
        metric = self._metric_instance(plugin)
        rows_ids = [(i,) for i in plan.enroll_ids]
        cols_ids = [(i,) for i in plan.test_ids]
        anon_key = self._anonymized[(anon.label, "evaluation")][0]
        matrices = {}
        for protocol in ("O-O", "O-A", "A-A"):
            enroll_corpus, test_corpus = self._side_corpora(protocol, anonymized)
            ev = anon_key if protocol == "A-A" else None
            tv = anon_key if protocol != "O-O" else None
            r = self._represent(attacker, train_key, rows_ids, enroll_corpus, ev)
            c = self._represent(attacker, train_key, cols_ids, test_corpus, tv)
            grid = attacker.score(np.repeat(r, len(c), axis=0), np.tile(c, (len(r), 1))).reshape(len(r), len(c))
            matrices[protocol] = SimilarityMatrix(
                grid,
                np.array([plan.evaluation[i[0]].speaker for i in rows_ids]),
                np.array([plan.evaluation[i[0]].speaker for i in cols_ids]),
                np.array([i[0] for i in rows_ids]),
                np.array([i[0] for i in cols_ids]),
            )
        coords = {"anonymizer": anon.label, "attacker": att.label, "scenario": att.train_on, "protocol": "", "n": 1}
        return [_row(coords, plugin, r) for r in metric.compute(MetricInputs(similarity=matrices, attributes=coords))]


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


def _safe_name(utt_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", utt_id)


def _file_rate(path: str) -> int:
    import soundfile as sf

    return int(sf.info(path).samplerate)


def _read_anonymized(folder: Path, original: Corpus) -> Corpus:
    from vpeval.data.audio import check_audio

    utts = []
    for line in (folder / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        src = original[entry["id"]]
        path = folder / entry["file"]
        frames, rate = check_audio(path)
        utts.append(src.replace(path=str(path), sample_rate=rate, duration=frames / rate))
    return Corpus(original.name + "-anonymized", utts, dict(original.speaker_gender), fingerprint=folder.name)


def _trials_key(trial_list: TrialList) -> str:
    return stable_key([trial_list.n, [(t.enroll, t.test, t.target) for t in trial_list.trials]])


def _save_scores(folder: Path, s: Scores) -> None:
    arrays = {"scores": s.scores, "targets": s.targets}
    for name in ("genders", "enroll_speakers", "test_speakers", "enroll_ids", "test_ids"):
        value = getattr(s, name)
        if value is not None:
            arrays[name] = np.asarray(value).astype(str)
    np.savez(folder / "scores.npz", **arrays)


def _load_scores(folder: Path) -> Scores:
    with np.load(folder / "scores.npz", allow_pickle=False) as data:
        get = lambda k: data[k] if k in data.files else None  # noqa: E731
        return Scores(data["scores"], data["targets"], get("genders"), get("enroll_speakers"), get("test_speakers"), get("enroll_ids"), get("test_ids"))
