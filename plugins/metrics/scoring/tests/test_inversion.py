"""Seed 002 inversion metrics against direct computations."""

import numpy as np
import pytest

from vpeval.api import MetricInputs
from vpeval.errors import MetricInputError
from vpeval_scoring.eer import step_eer
from vpeval_scoring.inversion_metric import Inversion
from vpeval_scoring.sorted_trials import SortedTrials


def make(rng, speakers=8, per=5, dim=16, noise=0.3):
    centres = rng.normal(size=(speakers, dim))
    who = np.repeat(np.arange(speakers), per)
    target = centres[who] + 0.3 * rng.normal(size=(len(who), dim))
    recovered = target + noise * rng.normal(size=target.shape)
    return recovered, target, np.array([f"spk{w}" for w in who])


def test_inversion_numbers_equal_direct_computation():
    rng = np.random.default_rng(0)
    recovered, target, speakers = make(rng)
    out = {
        r.metric: r for r in Inversion().compute(MetricInputs(recovered=recovered, target=target, speakers=speakers))
    }
    cos = [a @ b / np.linalg.norm(a) / np.linalg.norm(b) for a, b in zip(recovered, target)]
    assert out["inversion-cossim"].value == pytest.approx(np.mean(cos))
    kl = []
    for a, b in zip(recovered, target):
        p = np.exp(b) / np.exp(b).sum()
        q = np.exp(a) / np.exp(a).sum()
        kl.append(sum(pk * np.log((pk + 1e-8) / (qk + 1e-8)) for pk, qk in zip(p, q)))
    assert out["inversion-kl"].value == pytest.approx(np.mean(kl))
    # verification over every recovered x target pair of two different utterances (never an utterance with itself)
    pairs = [(i, j) for i in range(len(recovered)) for j in range(len(target)) if i != j]
    scores = np.array(
        [recovered[i] @ target[j] / np.linalg.norm(recovered[i]) / np.linalg.norm(target[j]) for i, j in pairs]
    )
    same = np.array([speakers[i] == speakers[j] for i, j in pairs])
    assert out["inversion-eer"].details["pairs"] == len(pairs)
    assert out["inversion-eer"].value == pytest.approx(100 * step_eer(SortedTrials(scores, same).tally()).eer)
    best = max(
        (0.5 * ((scores[same] > t).mean() + (scores[~same] <= t).mean()), t) for t in [-np.inf, *sorted(set(scores))]
    )
    assert out["inversion-acc"].value == pytest.approx(100 * best[0])
    assert out["inversion-threshold"].value == pytest.approx(out["inversion-acc"].details["threshold"])
    assert out["inversion-min-dcf"].details["p_target"] == 0.01


def test_better_recovery_gives_better_numbers():
    rng = np.random.default_rng(1)

    def run(noise):
        recovered, target, speakers = make(rng, noise=noise)
        return {
            r.metric: r.value
            for r in Inversion().compute(MetricInputs(recovered=recovered, target=target, speakers=speakers))
        }

    good, bad = run(0.1), run(3.0)
    assert good["inversion-cossim"] > bad["inversion-cossim"]
    assert good["inversion-kl"] < bad["inversion-kl"]
    assert good["inversion-eer"] < bad["inversion-eer"]


def test_bad_embeddings_are_one_sentence_errors():
    rng = np.random.default_rng(2)
    recovered, target, speakers = make(rng)
    with pytest.raises(MetricInputError, match="do not match"):
        Inversion().compute(MetricInputs(recovered=recovered[:-1], target=target, speakers=speakers))
    recovered[0, 0] = np.nan
    with pytest.raises(MetricInputError, match="NaN"):
        Inversion().compute(MetricInputs(recovered=recovered, target=target, speakers=speakers))
    with pytest.raises(MetricInputError, match="non-target"):
        Inversion().compute(MetricInputs(recovered=target, target=target, speakers=np.array(["a"] * len(target))))
