"""The validation list of seed 000 (IV-A) and model selection on it.

"For model selection, we construct a fixed validation trial list with 100 target and 100 non-target
trials per speaker. For each such speaker, we first construct separate enrollment and target datasets
at the utterance level and then build multi-utterance trials by sampling from these pools."

Here each validation speaker's utterances are split into an enrollment and a target pool (half each);
a target trial pairs N utterances of its enrollment pool with N of its target pool, a non-target trial
pairs N of its enrollment pool with N of another validation speaker's target pool. The list is drawn
once per stage from the experiment seed; every epoch is scored on it (cosine, EER) and the epoch with
the lowest EER is the model kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vpeval.types import Utterance


@dataclass
class ValidationTrials:
    sides: list[list[Utterance]]  # distinct trial sides
    pairs: np.ndarray  # [P, 2] indices into sides (enrollment, target)
    target: np.ndarray  # [P] bool

    @classmethod
    def draw(
        cls, utterances: Sequence[Utterance], n: int, targets: int, nontargets: int, rng: np.random.Generator
    ) -> ValidationTrials | None:
        """`targets` + `nontargets` trials per speaker with sides of n utterances (fewer where a pool is
        smaller); None when fewer than two speakers have two utterances (no non-target trial exists)."""
        by_speaker: dict[str, list[Utterance]] = {}
        for u in utterances:
            by_speaker.setdefault(u.speaker, []).append(u)
        speakers = sorted(s for s, utts in by_speaker.items() if len(utts) >= 2)
        if len(speakers) < 2:
            return None
        enroll, test = {}, {}
        for s in speakers:
            utts = [by_speaker[s][i] for i in rng.permutation(len(by_speaker[s]))]
            half = len(utts) // 2
            enroll[s], test[s] = utts[:half], utts[half:]

        def side(pool: list[Utterance]) -> tuple[int, ...]:
            return tuple(sorted(rng.choice(len(pool), min(n, len(pool)), replace=False).tolist()))

        index: dict[tuple, int] = {}
        sides: list[list[Utterance]] = []

        def side_id(speaker: str, role: str, picks: tuple[int, ...]) -> int:
            key = (speaker, role, picks)
            if key not in index:
                index[key] = len(sides)
                pool = enroll[speaker] if role == "enroll" else test[speaker]
                sides.append([pool[i] for i in picks])
            return index[key]

        pairs, target = [], []
        for k, s in enumerate(speakers):
            for _ in range(targets):
                pairs.append((side_id(s, "enroll", side(enroll[s])), side_id(s, "test", side(test[s]))))
                target.append(True)
            others = speakers[:k] + speakers[k + 1 :]
            for _ in range(nontargets):
                other = others[int(rng.integers(len(others)))]
                pairs.append((side_id(s, "enroll", side(enroll[s])), side_id(other, "test", side(test[other]))))
                target.append(False)
        return cls(sides, np.array(pairs, dtype=np.int64), np.array(target))

    @property
    def utterances(self) -> list[Utterance]:
        """The distinct utterances the trials read (for cache identities)."""
        return list({(u.path, u.channel): u for side in self.sides for u in side}.values())

    def eer(self, vectors: np.ndarray) -> float:
        """EER of the trials' cosine scores, for side vectors [len(sides), D]."""
        from vpeval.stats import equal_error_rate

        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        scores = np.sum(unit[self.pairs[:, 0]] * unit[self.pairs[:, 1]], axis=1)
        return float(equal_error_rate(scores[self.target], scores[~self.target]))
