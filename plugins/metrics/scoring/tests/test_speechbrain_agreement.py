"""The step EER and (unnormalised) minDCF agree with SpeechBrain's own functions."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
metric_stats = pytest.importorskip("speechbrain.utils.metric_stats")

from vpeval_scoring.dcf import min_dcf  # noqa: E402
from vpeval_scoring.eer import step_eer  # noqa: E402
from vpeval_scoring.sorted_trials import SortedTrials  # noqa: E402


@pytest.mark.parametrize("seed", range(6))
def test_step_eer_and_min_dcf_match_speechbrain(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    targets = rng.random(n) < 0.3
    targets[:2] = [True, False]
    scores = rng.normal(targets * 1.5, 1.0)
    if seed % 2:
        scores = np.round(scores, 1)  # ties
    trials = SortedTrials(scores, targets).tally()
    pos, neg = torch.tensor(scores[targets]), torch.tensor(scores[~targets])
    sb_eer, sb_threshold = metric_stats.EER(pos, neg)
    ours = step_eer(trials)
    assert ours.eer == pytest.approx(sb_eer, abs=1e-6)  # SpeechBrain rounds its rates to float32
    assert ours.threshold == pytest.approx(sb_threshold)
    sb_dcf, _ = metric_stats.minDCF(pos, neg, p_target=0.01)
    assert min_dcf(trials, 0.01).value * 0.01 == pytest.approx(sb_dcf, abs=1e-6)
