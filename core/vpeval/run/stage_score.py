"""The score stage: one trained attacker's scores of every trial list, under each protocol (O-O: original
enrollment and test; O-A: anonymized test; A-A: both anonymized), against one anonymizer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval.api import Attacker
from vpeval.run.cache import stable_key
from vpeval.run.cached_step import get_or_build
from vpeval.run.run_state import RunState
from vpeval.run.stored import StoredScores
from vpeval.run.trial_scoring import represent_sides, trial_scores
from vpeval.schema import ResolvedAnonymizer, ResolvedAttacker
from vpeval.types import Corpus, EvaluationPlan, Scores, TrialList


@dataclass
class ScoreSet:
    anonymizer: str
    attacker: str
    scenario: str
    protocol: str
    n: int
    scores: Scores
    key: str = ""  # the score stage's cache key: what metrics of these scores are keyed by


def score_attacker(
    state: RunState,
    att: ResolvedAttacker,
    attacker: Attacker,
    train_key: str,
    anon: ResolvedAnonymizer | None,
    plan: EvaluationPlan,
    anonymized_eval: dict[str, Corpus],
) -> list[ScoreSet]:
    """One score set per protocol and N; without an anonymizer, O-O only."""
    out = []
    for protocol in state.settings.protocols:
        if protocol != "O-O" and anon is None:
            continue
        anon_key = state.anonymized_key(anon.label) if anon is not None and protocol != "O-O" else None
        for n, trial_list in sorted(plan.trial_lists.items()):
            key = state.cache.key(
                "score",
                {
                    "train": train_key,
                    "protocol": protocol,
                    "anonymized": anon_key,
                    "data": state.fingerprint,
                    "trials": _trials_key(trial_list),
                },
            )
            label = f"{att.label} {protocol} N={n}" + (f" vs {anon.label}" if anon else "")

            def score(protocol=protocol, trial_list=trial_list, anon_key=anon_key) -> Scores:
                sides = side_corpora(state, protocol, anonymized_eval.get(anon.label) if anon else None)
                return _score_trials(state, attacker, train_key, trial_list, sides, anon_key, protocol)

            def planned(trials=trial_list.trials) -> Scores:  # planning: the trials' labels, zero scores
                return trial_scores(trials, np.zeros(len(trials)))

            scores = get_or_build(state, "score", label, key, StoredScores, score, [plan.evaluation], planned)
            out.append(ScoreSet(anon.label if anon else "none", att.label, att.train_on, protocol, n, scores, key))
    return out


def side_corpora(state: RunState, protocol: str, anonymized: Corpus | None) -> tuple[Corpus, Corpus]:
    """The enrollment and test speech of `protocol`."""
    original = state.plan.evaluation
    if protocol == "O-O":
        return original, original
    assert anonymized is not None
    return (original, anonymized) if protocol == "O-A" else (anonymized, anonymized)


def _score_trials(state: RunState, attacker, train_key, trial_list: TrialList, sides, anon_key, protocol) -> Scores:
    enroll_corpus, test_corpus = sides
    enroll_version = anon_key if protocol == "A-A" else None
    test_version = anon_key if protocol in ("O-A", "A-A") else None
    trials = trial_list.trials
    enroll = represent_sides(
        attacker, state.remembered(train_key, enroll_version), [t.enroll for t in trials], enroll_corpus
    )
    test = represent_sides(attacker, state.remembered(train_key, test_version), [t.test for t in trials], test_corpus)
    return trial_scores(trials, attacker.score(enroll, test))


def _trials_key(trial_list: TrialList) -> str:
    # The subset joins the key only where there is one, so the keys of one-set plans stay as they were.
    return stable_key(
        [trial_list.n, [(t.enroll, t.test, t.target) + ((t.subset,) if t.subset else ()) for t in trial_list.trials]]
    )
