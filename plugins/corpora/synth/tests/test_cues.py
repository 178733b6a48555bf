"""The cue measurement's EER against a brute-force computation, and on the tiny corpus."""

import numpy as np
import pytest

from vpeval_synth.cues import eer


def _brute_force_eer(scores, targets):
    best = None
    for threshold in np.concatenate([[np.inf], np.sort(scores)]):
        accept = scores >= threshold
        frr = np.mean(~accept[targets])
        far = np.mean(accept[~targets])
        if best is None or abs(frr - far) < best[0]:
            best = (abs(frr - far), (frr + far) / 2)
    return best[1]


def test_eer_matches_brute_force_on_random_scores():
    rng = np.random.default_rng(0)
    for _ in range(20):
        targets = rng.random(200) < 0.3
        scores = rng.standard_normal(200) + 1.5 * targets
        assert eer(scores, targets) == pytest.approx(_brute_force_eer(scores, targets))


def test_eer_extremes():
    targets = np.array([True, True, False, False])
    assert eer(np.array([0.9, 0.8, 0.1, 0.2]), targets) == 0.0
    assert eer(np.array([0.1, 0.2, 0.9, 0.8]), targets) == 1.0


@pytest.mark.slow
def test_cues_identify_speakers_on_the_tiny_corpus(tiny_corpus):
    from vpeval_synth.cues import measure_cues

    rows = measure_cues(tiny_corpus, set_size=3)
    by = {(r["cue"].split()[0], r["trials"]): r["eer"] for r in rows}
    assert by[("MFCC", "1 utterance")] < 0.4
    assert by[("transcript", "sets of 3")] < by[("transcript", "1 utterance")]
