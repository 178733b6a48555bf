"""The metrics stage: each metric plugin's result rows, from the inputs of its `needs`.

One table (METRIC_INPUTS) holds the kinds of metric input: each kind is one small function that gives
the rows of one metric plugin from what the run has made so far (a MetricScope), and says whether it runs
once per trained attacker (while the attacker is in memory) or once per run, after the attacks."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vpeval.api import Attacker, MetricInputs, SimilarityMatrix
from vpeval.errors import PluginError
from vpeval.executor import LocalExecutor
from vpeval.run.cache import stable_key
from vpeval.run.cached_step import get_or_build
from vpeval.run.run_state import RunState
from vpeval.run.stage_score import ScoreSet, side_corpora
from vpeval.run.stage_train import training_data
from vpeval.run.stored import StoredMetricResults
from vpeval.run.trial_scoring import represent_sides
from vpeval.schema import ResolvedAnonymizer, ResolvedAttacker, ResolvedPlugin
from vpeval.types import Corpus, EvaluationPlan, MetricResult

Rows = list[dict[str, Any]]


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


# -- the run's use of the table -------------------------------------------------------------------


def metric_plugins(state: RunState, needs: str) -> list[ResolvedPlugin]:
    return [m for m in state.exp.metrics if state.manager.get("metric", m.use).needs == needs]


def refuse_unknown_metric_inputs(state: RunState) -> None:
    """A metric whose `needs` no builder provides would silently give no rows: refuse it before any work."""
    for m in state.exp.metrics:
        cls = state.manager.get("metric", m.use)
        if cls.needs not in METRIC_INPUTS:
            raise PluginError(
                f"metric {m.use} reads '{cls.needs}', which vpeval does not provide (a metric "
                f"reads one of: {', '.join(METRIC_INPUTS)}); this is a bug in {cls.distribution} "
                f"{cls.version}: report it to its authors."
            )


def metrics_read_anonymized(state: RunState) -> bool:
    """Whether a metric of the run reads the anonymized evaluation speech (so it is made even when no
    protocol scores it)."""
    return any(kind.reads_anonymized and metric_plugins(state, needs) for needs, kind in METRIC_INPUTS.items())


def attacker_metric_rows(state: RunState, scope: MetricScope) -> Rows:
    """The rows of the per-attacker metric kinds for the trained attacker in `scope`, kinds in table order."""
    return [
        row
        for needs, kind in METRIC_INPUTS.items()
        if kind.per_attacker
        for plugin in metric_plugins(state, needs)
        for row in kind.rows(state, plugin, scope)
    ]


def metric_rows(state: RunState, scope: MetricScope, attacker_rows: Rows) -> Rows:
    """Every metric row, in table order; the per-attacker kinds' rows (computed while each attacker was in
    memory, `attacker_rows`) stand together at the place of the first of them, in the order attackers trained."""
    rows: Rows = []
    for needs, kind in METRIC_INPUTS.items():
        if kind.per_attacker:
            rows, attacker_rows = rows + attacker_rows, []
        else:
            rows += [row for plugin in metric_plugins(state, needs) for row in kind.rows(state, plugin, scope)]
    return rows


def _metric_key(state: RunState, plugin: ResolvedPlugin, inputs_key: dict[str, Any], coords: dict[str, Any]) -> str:
    payload = {"metric": plugin.identity(), "seed": state.settings.seed, "inputs": inputs_key, "attributes": coords}
    return state.cache.key("metrics", payload)


def _metric(state: RunState, plugin: ResolvedPlugin):
    if plugin.label not in state.metrics:
        identity = stable_key(plugin.identity())[:16]
        state.metrics[plugin.label] = state.instantiate(plugin, "metric-" + plugin.use, identity)
    return state.metrics[plugin.label]


def _metric_results(
    state: RunState,
    plugin: ResolvedPlugin,
    label: str,
    inputs_key: dict[str, Any],
    coords: dict[str, Any],
    inputs: Callable[[], MetricInputs],
    ready: list[MetricResult] | None = None,
) -> list[MetricResult]:
    """A metric's results, cached like any stage under its identity, the seed (bootstrap draws), the
    coordinates it is given and the keys of its inputs; `ready`: computed already (on the run's workers)."""
    key = _metric_key(state, plugin, inputs_key, coords)
    compute = (lambda: ready) if ready is not None else (lambda: _metric(state, plugin).compute(inputs()))
    label = f"{plugin.label} on {label}"
    return get_or_build(state, "metrics", label, key, StoredMetricResults, compute, reads=[state.plan.evaluation])


def _on_workers(state: RunState, plugin: ResolvedPlugin, jobs: list[tuple]) -> dict[int, list[MetricResult]]:
    """The results of the jobs (coords, label, inputs key, inputs) the cache lacks, computed in forked workers
    (the run's `workers`) where several are: bootstrap loops hold the interpreter lock, so threads would not
    share them. Each draw's seed comes from the metric's keys, never from the worker: the same numbers."""
    todo = [i for i, (coords, _, ins, _) in enumerate(jobs) if not state.cache.exists("metrics", _metric_key(
        state, plugin, ins, coords))]  # fmt: skip
    if state.settings.workers < 2 or len(todo) < 2 or state.planned is not None:
        return {}
    metric, started = _metric(state, plugin), time.perf_counter()
    ready = dict(LocalExecutor(state.settings.workers).map(lambda i: (i, metric.compute(jobs[i][3]())), todo))
    state.log.info("metrics %s: %d computed on %d workers in %.1f s", plugin.label, len(ready),
                   state.settings.workers, time.perf_counter() - started)  # fmt: skip
    return ready


# -- the kinds of metric input -----------------------------------------------------------------------


def _score_rows(state: RunState, plugin: ResolvedPlugin, scope: MetricScope) -> Rows:
    """needs "scores": once per score set (attacker, protocol, N, anonymizer)."""
    jobs = []
    for s in scope.score_sets:
        coords = dict(anonymizer=s.anonymizer, attacker=s.attacker, scenario=s.scenario, protocol=s.protocol, n=s.n)
        label = f"{s.attacker} {s.protocol} N={s.n} vs {s.anonymizer}"
        # The pooled rows first; then, with several evaluation sets (VoicePrivacy's libri_dev and libri_test),
        # each set's own rows, as the challenge reports them, with a `dataset` coordinate.
        for subset in [None, *s.scores.subset_names()]:
            part = coords if subset is None else {**coords, "dataset": subset}

            def inputs(s=s, subset=subset, part=part) -> MetricInputs:
                scores = s.scores if subset is None else s.scores.select(np.asarray(s.scores.subsets) == subset)
                return MetricInputs(scores=scores, attributes=part)

            jobs.append((part, label + (f" on {subset}" if subset is not None else ""), {"scores": s.key}, inputs))
    ready = _on_workers(state, plugin, jobs)
    return [
        _row(part, plugin, r)
        for i, (part, where, inputs_key, inputs) in enumerate(jobs)
        for r in _metric_results(state, plugin, where, inputs_key, part, inputs, ready.get(i))
    ]


def _speech_rows(state: RunState, plugin: ResolvedPlugin, scope: MetricScope) -> Rows:
    """needs "speech": once per anonymizer, the original and anonymized evaluation speech (rows about the
    original speech once, not once per anonymizer)."""
    rows: Rows = []
    original = scope.plan.evaluation
    original_key = stable_key([state.fingerprint, [u.id for u in original.utterances]])
    seen_original: set[tuple] = set()
    for anon in list(state.exp.anonymizers) or [None]:
        anonymized = scope.anonymized.get(anon.label) if anon else None
        anonymized_key = state.anonymized_key(anon.label) if anon else None
        coords = dict(anonymizer=anon.label if anon else "original", attacker="", scenario="", protocol="", n=None)
        results = _metric_results(
            state,
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


def _similarity_rows(state: RunState, plugin: ResolvedPlugin, scope: MetricScope) -> Rows:
    """needs "similarity": utterance-by-utterance score matrices (enrollment pool x trial pool) for GVD-like
    metrics, once per anonymizer the trained attacker is evaluated on."""
    trained, plan = scope.trained, scope.plan
    assert trained is not None
    att, attacker, train_key = trained.spec, trained.model, trained.key
    rows_ids = [(i,) for i in plan.enroll_ids]
    cols_ids = [(i,) for i in plan.test_ids]
    rows = []
    for anon in state.exp.anonymizers:
        if att.train_on == "anonymized" and anon is not trained.system:
            continue
        anonymized = scope.anonymized[anon.label]
        anon_key = state.anonymized_key(anon.label)
        coords = {"anonymizer": anon.label, "attacker": att.label, "scenario": att.train_on, "protocol": "", "n": 1}

        def matrices(anonymized=anonymized, anon_key=anon_key, coords=coords) -> MetricInputs:
            out = {}
            for protocol in ("O-O", "O-A", "A-A"):
                enroll_corpus, test_corpus = side_corpora(state, protocol, anonymized)
                ev = anon_key if protocol == "A-A" else None
                tv = anon_key if protocol != "O-O" else None
                r = represent_sides(attacker, state.remembered(train_key, ev), rows_ids, enroll_corpus)
                c = represent_sides(attacker, state.remembered(train_key, tv), cols_ids, test_corpus)
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
            "data": state.fingerprint,
            "pools": stable_key([plan.enroll_ids, plan.test_ids]),
        }
        results = _metric_results(state, plugin, f"{att.label} vs {anon.label}", inputs_key, coords, matrices)
        rows += [_row(coords, plugin, r) for r in results]
    return rows


def _embedding_rows(state: RunState, plugin: ResolvedPlugin, scope: MetricScope) -> Rows:
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
    versions += [("A", anon) for anon in state.exp.anonymizers if system is None or anon is system]
    training = _training_side(state, trained) if state.manager.get("metric", plugin.use).reads_training_side else {}
    rows = []
    for protocol, anon in versions:
        observed = scope.anonymized[anon.label] if anon is not None else plan.evaluation
        anon_key = state.anonymized_key(anon.label) if anon is not None else None
        coords = dict(anonymizer=anon.label if anon else "none", attacker=att.label, scenario=att.train_on)
        coords.update(protocol=protocol, n=1)

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
                **training,
            )

        inputs_key = {
            "train": train_key,
            "anonymized": anon_key,
            "data": state.fingerprint,
            "utterances": stable_key([u.id for u in plan.evaluation.utterances]),
        }
        label = f"{att.label} {protocol}" + (f" vs {anon.label}" if anon else "")
        rows += [_row(coords, plugin, r) for r in _metric_results(state, plugin, label, inputs_key, coords, inputs)]
    return rows


def _training_side(state: RunState, trained: TrainedAttacker) -> dict[str, Any]:
    """The speech the attacker trained on (a pretrained attacker: the plan's attacker-train split) and its
    single-utterance vectors of any of it, remembered per run like the evaluation sides."""
    corpus = training_data(state, trained.spec, trained.system)[0].corpus
    table = state.remembered(trained.key, "training")
    return {
        "train": corpus,
        "embed_train": lambda ids: represent_sides(trained.model, table, [(i,) for i in ids], corpus),
    }


@dataclass(frozen=True)
class MetricInputKind:
    """How the run builds the inputs of the metrics of one `needs`."""

    rows: Callable[[RunState, ResolvedPlugin, MetricScope], Rows]  # one metric plugin's rows
    per_attacker: bool  # once per trained attacker (MetricScope.trained), else once per run after the attacks
    reads_anonymized: bool  # it reads the anonymized evaluation speech, even when no protocol scores it


# needs -> its builder: a new kind of metric input is one entry (and one MetricInputs field). The order is
# the order of the result rows (see metric_rows).
METRIC_INPUTS: dict[str, MetricInputKind] = {
    "scores": MetricInputKind(_score_rows, per_attacker=False, reads_anonymized=False),
    "similarity": MetricInputKind(_similarity_rows, per_attacker=True, reads_anonymized=True),
    "embeddings": MetricInputKind(_embedding_rows, per_attacker=True, reads_anonymized=True),
    "speech": MetricInputKind(_speech_rows, per_attacker=False, reads_anonymized=True),
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
