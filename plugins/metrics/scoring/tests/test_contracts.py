"""The metric contract for every metric this package registers."""

import numpy as np

from vpeval.api import MetricInputs, SimilarityMatrix
from vpeval.testing.contracts import MetricContract


class TestStepEER(MetricContract):
    plugin_name = "eer-step"
    params = {"bootstrap": 50}


class TestRocchEER(MetricContract):
    plugin_name = "eer-rocch"
    params = {"bootstrap": 50}


class TestEER(MetricContract):
    plugin_name = "eer"
    params = {"bootstrap": 50, "variant": "rocch"}


class TestMinDCF(MetricContract):
    plugin_name = "min-dcf"
    params = {"bootstrap": 50, "p_target": [0.05]}


class TestCllr(MetricContract):
    plugin_name = "cllr"
    params = {"bootstrap": 50}


class TestMinCllr(MetricContract):
    plugin_name = "min-cllr"
    params = {"bootstrap": 50}


class TestLinkability(MetricContract):
    plugin_name = "linkability"
    params = {"bootstrap": 50}


class TestZebra(MetricContract):
    plugin_name = "zebra"
    params = {"bootstrap": 50}


class TestPerSpeakerEER(MetricContract):
    plugin_name = "per-speaker-eer"
    params = {"bootstrap": 50, "clip": True}


class TestTPRAtFPR(MetricContract):
    plugin_name = "tpr-at-fpr"
    params = {"bootstrap": 50, "fpr": [0.05, 0.01]}  # the contract's 560 non-targets resolve 1 %, not 0.1 %


def _matrices():
    rng = np.random.default_rng(0)
    spk = np.repeat([f"s{k}" for k in range(5)], 3)
    same = spk[:, None] == spk[None, :]
    make = lambda sep: SimilarityMatrix(rng.normal(size=same.shape) + sep * same, spk, spk.copy())  # noqa: E731
    return {"O-O": make(3.0), "A-A": make(1.0), "O-A": make(0.2)}


class TestGVD(MetricContract):
    plugin_name = "gvd"

    def inputs(self):
        return MetricInputs(similarity=_matrices())


class TestDeID(MetricContract):
    plugin_name = "de-id"

    def inputs(self):
        return MetricInputs(similarity=_matrices())


class TestInversion(MetricContract):
    plugin_name = "inversion"

    def inputs(self):
        rng = np.random.default_rng(0)
        speakers = np.repeat(np.arange(6), 4)
        target = rng.normal(size=(6, 8))[speakers] + 0.3 * rng.normal(size=(24, 8))
        return MetricInputs(
            recovered=target + 0.5 * rng.normal(size=target.shape), target=target, speakers=speakers.astype(str)
        )
