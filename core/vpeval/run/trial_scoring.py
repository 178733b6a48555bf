"""Scoring one trial list with an embedding attacker: each distinct trial side represented once per run
(remembered by speech version), then the attacker's scores of the trials' side pairs.

Kept apart from the runner so that benchmarks/scale.py measures this very code at VoicePrivacy size."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vpeval.api import Attacker
from vpeval.errors import PluginError
from vpeval.types import Corpus, Scores, Trial
from vpeval.vector_table import VectorTable


def represent_sides(
    attacker: Attacker, remembered: VectorTable, sides: Sequence[tuple[str, ...]], corpus: Corpus
) -> np.ndarray:
    """[len(sides), ...] float64: each side (utterance ids of `corpus`) as the attacker represents it; sides
    that `remembered` lacks are given to represent_many once, together, and kept."""
    missing = remembered.missing(sides)
    if missing:
        vectors = attacker.represent_many([corpus.utterances_of(side) for side in missing])
        if len(vectors) != len(missing):
            raise PluginError(
                f"attacker {getattr(attacker, 'name', type(attacker).__name__)} returned {len(vectors)} "
                f"vectors for {len(missing)} trial sides; this is a bug in the plugin: report it to its authors."
            )
        remembered.add(missing, vectors)
    return remembered.take(sides)


def trial_scores(trials: Sequence[Trial], values: np.ndarray) -> Scores:
    """The trials' scores with the columns the metrics read (labels, genders, speakers, ids, subsets)."""
    return Scores(
        np.asarray(values, dtype=np.float64),
        np.array([t.target for t in trials]),
        np.array([t.gender or "" for t in trials]),
        np.array([t.enroll_speaker for t in trials]),
        np.array([t.test_speaker for t in trials]),
        np.array([t.enroll_id for t in trials]),
        np.array([t.test_id for t in trials]),
        np.array([t.subset for t in trials]) if any(t.subset for t in trials) else None,
    )
