"""Validation of a trained attacker: a held-out split and the cosine EER of random trial pairs on it.

Shared by the attackers that record a validation EER per epoch (early stopping, model selection, or the
report's under-training alarm alone). Needs the core (the `core` extra), as every plugin that uses it has.
It lives here, not in the core, which keeps to its size budget (tests/test_core_size.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vpeval.stats import equal_error_rate
from vpeval.types import Corpus, Utterance


def hold_out(corpus: Corpus, share: float, rng: np.random.Generator) -> tuple[list[Utterance], list[Utterance]]:
    """(training, validation) utterances: a share of each speaker's utterances, by utterance.

    A speaker gives validation utterances only if two or more can go (a target pair needs two) and at
    least one stays for training.
    """
    train: list[Utterance] = []
    held: list[Utterance] = []
    for utts in corpus.by_speaker().values():
        count = int(round(share * len(utts))) if share > 0 else 0
        if count >= 1:
            count = max(2, count)
        if count < 2 or len(utts) - count < 1:
            train.extend(utts)
            continue
        order = rng.permutation(len(utts))
        held.extend(utts[i] for i in sorted(order[:count]))
        train.extend(utts[i] for i in sorted(order[count:]))
    return train, held


@dataclass
class ValidationTrials:
    """Utterances and the index pairs scored on them."""

    utterances: list[Utterance]
    first: np.ndarray
    second: np.ndarray
    target: np.ndarray

    @classmethod
    def draw(
        cls, utterances: Sequence[Utterance], trials: int, max_utterances: int, rng: np.random.Generator
    ) -> ValidationTrials | None:
        """Half target and half non-target pairs (all of them if there are fewer); None if either kind is missing."""
        utts = list(utterances)
        if len(utts) > max_utterances:
            utts = [utts[i] for i in sorted(rng.choice(len(utts), max_utterances, replace=False))]
        speakers = np.array([u.speaker for u in utts])
        i, j = np.triu_indices(len(utts), k=1)
        same = speakers[i] == speakers[j]
        if not same.any() or same.all():
            return None
        picks = []
        for mask in (same, ~same):
            idx = np.flatnonzero(mask)
            if idx.size > trials // 2:
                idx = np.sort(rng.choice(idx, trials // 2, replace=False))
            picks.append(idx)
        chosen = np.concatenate(picks)
        return cls(utts, i[chosen], j[chosen], same[chosen])

    def eer(self, embeddings: np.ndarray) -> float:
        """EER (0-1) of cosine scores of the pairs, given embeddings [U, D] of `utterances`."""
        e = length_normalise(embeddings)
        scores = np.einsum("ij,ij->i", e[self.first], e[self.second])
        return equal_error_rate(scores[self.target], scores[~self.target])


def length_normalise(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, in float64 (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
