"""The cache-or-compute step of every stage: reuse the entry under a content key, or compute it, store it
atomically and record its time. So changing one attacker reruns only that attacker, and a killed run
resumes where it stopped with the same numbers."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from vpeval.errors import DataError
from vpeval.run.run_state import RunState
from vpeval.run.stored import Stored
from vpeval.types import Corpus

_DAMAGED = object()  # what _reuse returns for an entry it moved aside


def get_or_build(
    state: RunState,
    stage: str,
    label: str,
    key: str,
    stored: Stored,
    compute: Callable[[], Any],
    reads: Sequence[Corpus | None] | None = None,
    stand_in: Callable[[], Any] | None = None,
) -> Any:
    """The entry under `key`, reused or computed. One process at a time builds an entry; others wait and
    reuse it.

    A damaged entry is moved aside and recomputed. Before a result is stored, the audio files of the
    corpora it may have read (`reads`; default: the whole plan) must be as they were fingerprinted. Planning
    (`validate --plan`) notes the entry and returns a stand-in: all that later stages' keys read of the value."""
    cache = state.cache
    if state.planned is not None:
        state.planned.setdefault((stage, key), label)
        return stand_in() if stand_in is not None else stored.stand_in()

    def waiting(holder: str) -> None:
        state.log.info("%s %s: waiting for %s, which is computing it", stage, label, holder)

    with cache.lock(stage, key, waiting):
        if cache.exists(stage, key):
            reused = _reuse(state, stage, label, key, stored)
            if reused is not _DAMAGED:
                return reused
        state.log.info("%s %s: computing", stage, label)  # with "computed in" below: a line at each end
        started = time.perf_counter()
        value = compute()
        _check_unchanged(state, stage, label, key, reads)
        with cache.build(stage, key) as tmp:
            stored.save(value, tmp)
        cache.note(stage, key, label=label, seconds=round(_timed(state, stage, label, started), 3))
        return stored.load(cache.path(stage, key)) if stored.reload else value


def _reuse(state: RunState, stage: str, label: str, key: str, stored: Stored) -> Any:
    """The entry's value when it is intact, else `_DAMAGED` (the entry moved aside, with one log line)."""
    cache = state.cache
    check = cache.verify(stage, key)
    problem = check.problem
    if problem is None:
        try:
            value = stored.load(cache.path(stage, key))
        except Exception as exc:
            if not check.legacy:  # its files are as written: a failing load is a bug, not damage
                raise
            problem = f"it cannot be loaded: {type(exc).__name__}: {exc}"
        else:
            if check.legacy:
                try:
                    cache.adopt(stage, key)
                except OSError:  # a read-only cache: reused unverified, as before manifests
                    pass
            state.log.info("%s %s: reused from cache (key %s)", stage, label, key[:12])
            cache.note(stage, key)  # its last use
            return value
    aside = cache.discard(stage, key)
    message = "cache entry %s %s (key %s) was damaged (%s); recomputing it (the damaged copy is in %s)"
    state.log.warning(message, stage, label, key[:12], problem, aside)
    return _DAMAGED


def _check_unchanged(state: RunState, stage: str, label: str, key: str, reads: Sequence[Corpus | None] | None) -> None:
    """Refuse to store a result when an audio file it may have read changed after fingerprinting."""
    from vpeval.data.fingerprint import changed_file

    plan = state.plan
    if reads is None:
        reads = [plan.train, plan.validation, plan.evaluation] if plan is not None else []
    paths = (u.path for corpus in reads if corpus is not None for u in corpus.utterances)
    changed = changed_file(paths, state.stamps)
    if changed is not None:
        state.cache.discard_partial(stage, key)  # what it holds may come from the new audio
        raise DataError(
            f"Audio file {changed} changed during the run, after vpeval fingerprinted the corpus and "
            f"before {stage} {label} was stored; rerun the experiment to evaluate the new version."
        )


def _timed(state: RunState, stage: str, label: str, started: float) -> float:
    took = time.perf_counter() - started
    state.timings[f"{stage}:{label}"] = state.timings.get(f"{stage}:{label}", 0.0) + took
    state.executed.setdefault(stage, []).append(label)
    state.log.info("%s %s: computed in %.1f s", stage, label, took)
    return took
