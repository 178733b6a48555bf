"""The data stage: the corpus loaded, scanned and fingerprinted, and the evaluation plan (trial lists
written into the run folder)."""

from __future__ import annotations

import os
import time

from vpeval.run.run_state import RunState
from vpeval.types import Corpus, EvaluationPlan


def data_stage(state: RunState) -> tuple[Corpus, EvaluationPlan, list[tuple[str, str, str]]]:
    """The corpus, its plan and the audio the scan skipped (utterance id, path, reason); the plan, the
    fingerprint and the audio files' stat stamps go into `state`."""
    from vpeval.data.fingerprint import corpus_fingerprint, file_stamp, observing_files
    from vpeval.data.plan import make_plan, write_sides, write_trials
    from vpeval.data.scan import scan_corpus

    started = time.perf_counter()
    exp, cache, log = state.exp, state.cache, state.log
    data = state.settings.data
    source = state.instantiate(exp.corpus, "corpus-" + exp.corpus.use)
    # One process at a time loads a corpus: generated corpora write their audio into the cache. Each
    # file's stat stamp is kept as the fingerprint (or the scan) first saw it: what a stage reads is
    # checked against it before its result is stored (cached_step._check_unchanged).
    lock = cache.lock("data", cache.key("data", {"corpus": exp.corpus.identity()}))
    with lock, observing_files() as stamps:
        corpus = source.load()
        # A corpus without a fingerprint gets it from the scan, of its declared values: each file is then
        # read from disk once (hashed just before it is decoded), not twice (BENCHMARKS.md "Scale").
        corpus, skipped = scan_corpus(corpus, data.on_bad_audio, cache.root / "fingerprints")
        for u in corpus.utterances:
            if (path := os.path.abspath(u.path)) not in stamps and (stamp := file_stamp(path)) is not None:
                stamps[path] = stamp
    state.stamps = dict(stamps)
    for utt_id, path, reason in skipped:
        log.warning("skipped %s (%s): %s", utt_id, path, reason)
    if not corpus.fingerprint:
        corpus.fingerprint = corpus_fingerprint(corpus, cache.root / "fingerprints")
    settings = exp.plan_settings  # validated when the experiment was loaded
    plan = source.evaluation_plan(corpus, settings) or make_plan(corpus, settings)
    for note in plan.notes:
        log.warning("data plan: %s", note)
    trials_dir = state.folder / "trials"
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
    state.timings["data"] = time.perf_counter() - started
    state.plan, state.fingerprint = plan, corpus.fingerprint
    return corpus, plan, skipped
