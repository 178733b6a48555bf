"""Fusion of other attackers by calibrated logistic regression (as BOSARIS / FoCal fuse ASV systems).

Training splits the training speakers in two, by a seeded draw: the attackers to fuse (reached through the
core, `context.get("attacker", ...)`) train on the first part; on the held-out part they score sampled
same-speaker and different-speaker pairs of single utterances, and a logistic regression with balanced
class weights maps the K scores of a pair to one log-likelihood ratio, w . s + b (balanced weights make
the fitted log odds an LLR at a target prior of 0.5). A side's representation is the K attackers'
representations side by side; a trial's score is the fused LLR of their K scores.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from vpeval.api import Attacker, Params, PluginRef
from vpeval.errors import ConfigError, DataError
from vpeval.stats import eer
from vpeval.types import Corpus, TrainingData, TrainingStage, Utterance


class AttackerSpec(Params):
    """One attacker to fuse, the way an experiment names one."""

    use: Annotated[str, PluginRef("attacker", params="params")] = Field(description="Attacker plugin name.")
    params: dict[str, Any] = Field(default_factory=dict, description="Its parameters.")


class FusionParams(Params):
    attackers: list[AttackerSpec] = Field(min_length=2, description="The attackers whose scores are fused.")
    held_out: float = Field(
        0.3, gt=0.0, lt=1.0, description="Share of the training speakers held out to fit the fusion."
    )
    trials_per_speaker: int = Field(
        20, ge=1, le=100_000, description="Same-speaker and different-speaker pairs drawn per held-out speaker (each)."
    )
    regularization: float = Field(1.0, gt=0.0, le=1e6, description="Inverse L2 strength C of the logistic regression.")


class Fusion(Attacker):
    """Calibrated logistic-regression fusion of other attackers' scores."""

    name = "fusion"
    Params = FusionParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self.parts: list[Attacker] = []
        self.dims: list[int] = []
        self.weights = np.zeros(0)
        self.bias = 0.0
        self.fit_summary: dict[str, Any] = {}

    # -- the parts, through the core ----------------------------------------------------------

    def _make_parts(self) -> list[Attacker]:
        parts = []
        for spec in self.params.attackers:
            if spec.use == self.name:
                raise ConfigError("fusion cannot fuse another fusion attacker; list the attackers themselves.")
            part = self.context.get("attacker", spec.use, dict(spec.params))
            if part.uses_frontend:
                raise ConfigError(
                    f"fusion cannot give attacker {spec.use} the frontend it needs; fuse attackers without a frontend."
                )
            parts.append(part)
        return parts

    # -- training -----------------------------------------------------------------------------

    def train(self, data: TrainingData) -> None:
        from sklearn.linear_model import LogisticRegression

        rng = self.context.rng("fusion", "held-out")
        corpus = data.corpus
        speakers = np.array(sorted({u.speaker for u in corpus}))
        held = set(rng.choice(speakers, size=max(2, round(self.params.held_out * len(speakers))), replace=False))
        if len(speakers) - len(held) < 2:
            raise DataError(
                f"fusion: the training data has {len(speakers)} speakers; holding out {len(held)} leaves too few "
                "to train the fused attackers. Lower `held_out` or train on more speakers."
            )
        self.parts = self._make_parts()
        fit_data = TrainingData(
            [TrainingStage(s.name, _speakers_of(s.corpus, held, keep=False), s.system) for s in data.stages],
            data.validation,
            data.scenario,
        )
        for spec, part in zip(self.params.attackers, self.parts, strict=True):
            if part.needs_training:
                self.context.log.info("fusion: training %s on %d speakers", spec.use, len(speakers) - len(held))
                part.train(fit_data)
        held_utts = [u for u in corpus if u.speaker in held]
        enroll, test, targets = held_out_trials(
            np.array([u.speaker for u in held_utts]), self.params.trials_per_speaker, rng
        )
        if targets.all() or not targets.any():
            raise DataError(
                "fusion: the held-out speakers give no same-speaker pair (each needs two utterances); "
                "raise `held_out` or give the training speakers more utterances."
            )
        sides = self._represent_parts([[u] for u in held_utts])
        scores = np.column_stack([part.score(r[enroll], r[test]) for part, r in zip(self.parts, sides, strict=True)])
        if not np.isfinite(scores).all():
            raise DataError("fusion: an attacker gave NaN or infinite scores on the held-out pairs; fix that attacker.")
        centre, scale = scores.mean(axis=0), scores.std(axis=0)
        scale[scale == 0] = 1.0
        model = LogisticRegression(C=self.params.regularization, class_weight="balanced")
        model.fit((scores - centre) / scale, targets)
        # Fold the standardisation into the weights: llr = w . s + b on the attackers' own scores.
        self.weights = model.coef_[0] / scale
        self.bias = float(model.intercept_[0] - self.weights @ centre)
        self.dims = [r.shape[1] for r in sides]
        fused = scores @ self.weights + self.bias
        self.fit_summary = {
            "held_out_speakers": len(held),
            "fit_speakers": len(speakers) - len(held),
            "pairs": int(len(targets)),
            "target_pairs": int(targets.sum()),
            "weights": {s.use: float(w) for s, w in zip(self.params.attackers, self.weights, strict=True)},
            "bias": self.bias,
            "held_out_eer": {
                **{s.use: 100 * eer(scores[:, k], targets) for k, s in enumerate(self.params.attackers)},
                "fusion": 100 * eer(fused, targets),
            },
        }
        self.context.log.info("fusion: fitted on held-out pairs: %s", json.dumps(self.fit_summary["held_out_eer"]))

    # -- representing and scoring -------------------------------------------------------------

    def _represent_parts(self, sides: Sequence[Sequence[Utterance]]) -> list[np.ndarray]:
        return [np.asarray(part.represent_many(sides), dtype=np.float64).reshape(len(sides), -1) for part in self.parts]

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return self.represent_many([utterances])[0]

    def represent_many(self, sides: Sequence[Sequence[Utterance]]) -> np.ndarray:
        return np.hstack(self._represent_parts(sides))

    def part_scores(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        """[T, K]: each fused attacker's scores of the row-wise pairs."""
        bounds = np.cumsum([0, *self.dims])
        return np.column_stack(
            [
                part.score(enroll[:, lo:hi], test[:, lo:hi])
                for part, lo, hi in zip(self.parts, bounds[:-1], bounds[1:], strict=True)
            ]
        )

    def score(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        return self.part_scores(np.atleast_2d(enroll), np.atleast_2d(test)) @ self.weights + self.bias

    # -- storage ------------------------------------------------------------------------------

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        for k, (spec, part) in enumerate(zip(self.params.attackers, self.parts, strict=True)):
            sub = folder / f"part{k}-{spec.use}"
            sub.mkdir(parents=True, exist_ok=True)
            part.save(sub)
        state = {"weights": self.weights.tolist(), "bias": self.bias, "dims": self.dims, "fit": self.fit_summary}
        (folder / "fusion.json").write_text(json.dumps(state, indent=1))

    def load(self, folder: Path) -> None:
        folder = Path(folder)
        state = json.loads((folder / "fusion.json").read_text())
        self.parts = self._make_parts()
        for k, (spec, part) in enumerate(zip(self.params.attackers, self.parts, strict=True)):
            part.load(folder / f"part{k}-{spec.use}")
        self.weights = np.asarray(state["weights"], dtype=np.float64)
        self.bias, self.dims, self.fit_summary = float(state["bias"]), list(state["dims"]), state["fit"]


def held_out_trials(
    speakers: np.ndarray, per_speaker: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(enroll index, test index, is target) of sampled single-utterance pairs: for each speaker with two or
    more utterances `per_speaker` same-speaker pairs of different utterances, and for every speaker
    `per_speaker` pairs with another speaker's utterance."""
    enroll, test, targets = [], [], []
    for s in np.unique(speakers):
        own, other = np.flatnonzero(speakers == s), np.flatnonzero(speakers != s)
        if len(own) >= 2:
            for _ in range(per_speaker):
                i, j = rng.choice(own, size=2, replace=False)
                enroll.append(i), test.append(j), targets.append(True)
        for _ in range(per_speaker):
            enroll.append(rng.choice(own)), test.append(rng.choice(other)), targets.append(False)
    return np.array(enroll, dtype=np.int64), np.array(test, dtype=np.int64), np.array(targets, dtype=bool)


def _speakers_of(corpus: Corpus, speakers: set[str], keep: bool) -> Corpus:
    utterances = [u for u in corpus if (u.speaker in speakers) == keep]
    genders = {s: g for s, g in corpus.speaker_gender.items() if (s in speakers) == keep}
    return Corpus(corpus.name, utterances, genders, info=dict(corpus.info))
