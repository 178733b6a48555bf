"""The anonymize stage: one anonymizer chain's version of one part of the plan (evaluation, train,
validation), one file per utterance, cached under the chain, the seed and the utterances."""

from __future__ import annotations

from vpeval.api import Anonymizer
from vpeval.names import utterance_file
from vpeval.run.anonymize_task import AnonymizeTask
from vpeval.run.cache import stable_key
from vpeval.run.cached_step import get_or_build
from vpeval.run.run_state import RunState
from vpeval.run.stored import SpeechFiles, StoredSpeech
from vpeval.schema import ResolvedAnonymizer
from vpeval.types import Corpus


def anonymize(state: RunState, anon: ResolvedAnonymizer, corpus: Corpus, part: str) -> Corpus:
    """`corpus` (the plan's `part`) through the chain `anon`; its key is kept in `state.anonymized`."""
    key = _anonymizer_key(state, anon, corpus)
    label = f"{anon.label} ({part})"
    result = get_or_build(
        state,
        "anonymize",
        label,
        key,
        StoredSpeech(corpus),
        lambda: _anonymize_files(state, anon, corpus, key, label),
        reads=[corpus],
    )
    state.anonymized[(anon.label, part)] = (key, result)
    return result


def _anonymizer_key(state: RunState, anon: ResolvedAnonymizer, corpus: Corpus) -> str:
    payload = {
        "anonymizer": anon.identity(),
        "seed": state.settings.seed,
        "data": state.fingerprint,
        "utterances": stable_key([u.id for u in corpus.utterances]),
    }
    inputs = [step.input_fingerprint() for step in _anonymizer_instances(state, anon)]
    if any(f is not None for f in inputs):  # only then: the keys of every other anonymizer stay as they were
        payload["inputs"] = inputs
    return state.cache.key("anonymize", payload)


def _anonymizer_instances(state: RunState, anon: ResolvedAnonymizer) -> list[Anonymizer]:
    """The chain's plugin instances, created once per run and not yet prepared."""
    steps = state.anonymizers.get(anon.label)
    if steps is None:
        steps = [state.instantiate(s, "anonymizer-" + s.use, stable_key(s.identity())[:16]) for s in anon.steps]
        state.anonymizers[anon.label] = steps
    return steps


def _anonymizer_steps(state: RunState, anon: ResolvedAnonymizer) -> list[Anonymizer]:
    """The chain's instances, prepared (once per run)."""
    steps = _anonymizer_instances(state, anon)
    if anon.label not in state.prepared:
        for step in steps:
            step.prepare()
        state.prepared.add(anon.label)
    return steps


def _anonymize_files(state: RunState, anon: ResolvedAnonymizer, corpus: Corpus, key: str, label: str) -> SpeechFiles:
    """One anonymized file per utterance in the entry's partial folder; what a killed run wrote is kept."""
    steps = _anonymizer_steps(state, anon)
    for step in steps:
        step.expect(corpus.utterances)  # refusals come before any audio is processed
    partial = state.cache.partial_path("anonymize", key)
    entries = [{"id": u.id, "file": utterance_file(u.id)} for u in corpus.utterances]
    todo = [u for u, e in zip(corpus.utterances, entries) if not (partial / e["file"]).exists()]
    # A picklable task: forked workers use these prepared steps, cluster workers rebuild the chain.
    settings = state.settings
    task = AnonymizeTask(
        anon, settings.seed, settings.threads, state.cache.root, partial, state.options, state.device, state.precision,
        link_stored=state.cache.throwaway,
    )  # fmt: skip
    task.remember(steps)
    if (done := len(entries) - len(todo)) > 0:
        state.log.info("anonymize %s: resuming, %d of %d utterances already done", label, done, len(entries))
    try:
        results = state.executor.map(task, todo, f"anonymize {label}")
        for _ in state.console.track(results, total=len(todo), description=f"anonymize {label}"):
            pass
    finally:
        task.forget()
    return SpeechFiles(partial, entries)
