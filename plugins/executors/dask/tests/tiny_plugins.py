"""A tiny run for the executor tests, in the main process only: a generated corpus, an MFCC-mean
attacker and an EER metric. The anonymizer is a real installed plugin (mcadams), because Dask workers
rebuild it from the installed entry points."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vpeval import hookimpl
from vpeval.api import Attacker, CorpusSource, Metric, MetricInputs
from vpeval.stats import eer
from vpeval.testing.dummies import make_corpus
from vpeval.testing.scorers import mfcc_mean
from vpeval.types import Corpus, MetricResult, Utterance


class TinyCorpus(CorpusSource):
    """Eight generated speakers, four short utterances each."""

    name = "tiny-executor-corpus"

    def load(self) -> Corpus:
        return make_corpus(self.context.folder("audio"), 8, 4, seconds=0.6, seed=3, name="tiny")


class MfccMean(Attacker):
    """Pretrained stand-in: the mean MFCC vector of a side, cosine scoring."""

    name = "tiny-mfcc"
    needs_training = False

    def represent(self, utterances: Sequence[Utterance]) -> np.ndarray:
        return np.mean([mfcc_mean(u.load(16000), 16000) for u in utterances], axis=0)


class Eer(Metric):
    """EER in %."""

    name = "tiny-eer"
    needs = "scores"

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        return [MetricResult("tiny-eer", 100 * eer(inputs.scores.scores, inputs.scores.targets), "all", unit="%")]


@hookimpl
def register_corpora(register):
    register(TinyCorpus)


@hookimpl
def register_attackers(register):
    register(MfccMean)


@hookimpl
def register_metrics(register):
    register(Eer)
