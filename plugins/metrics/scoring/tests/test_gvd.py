"""GVD and De-ID on constructed score matrices with known answers."""

import numpy as np
import pytest

from vpeval.api import MetricInputs, SimilarityMatrix
from vpeval.errors import MetricInputError
from vpeval_scoring.gvd import diagonal_dominance, speaker_similarity
from vpeval_scoring.similarity_metrics import GVD, DeID


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def block_matrix(speakers_per_side, utts, same, different, rng=None, noise=0.0):
    rows = np.repeat([f"s{k}" for k in range(speakers_per_side)], utts)
    scores = np.where(rows[:, None] == rows[None, :], same, different).astype(float)
    if noise:
        scores = scores + rng.normal(0, noise, scores.shape)
    return SimilarityMatrix(scores, rows, rows.copy())


def test_uncalibrated_matrix_reads_scores_as_llrs():
    m = block_matrix(4, 3, same=2.0, different=-1.0)
    sim = speaker_similarity(m.scores, m.row_speakers, m.col_speakers, calibrated=False)
    assert np.allclose(np.diag(sim.matrix), sigmoid(2.0))
    assert np.allclose(sim.matrix[~np.eye(4, dtype=bool)], sigmoid(-1.0))
    assert sim.diagonal_dominance == pytest.approx(sigmoid(2.0) - sigmoid(-1.0))


def test_calibrated_separated_matrix_has_closed_form():
    # Same-speaker pairs all score 5, others 0: Laplace PAV pools each class with one pseudo-trial pair.
    k, u = 5, 4
    m = block_matrix(k, u, same=5.0, different=0.0)
    n_tar = k * u * u
    n_non = k * u * (k - 1) * u
    prior = np.log(n_tar / n_non)
    llr_same = np.log(n_tar + 1) - np.log(1) - prior
    llr_diff = np.log(1) - np.log(n_non + 1) - prior
    sim = speaker_similarity(m.scores, m.row_speakers, m.col_speakers)
    assert sim.diagonal_dominance == pytest.approx(sigmoid(llr_same) - sigmoid(llr_diff))


def test_diagonal_dominance_definition():
    matrix = np.array([[0.9, 0.2, 0.1], [0.3, 0.8, 0.2], [0.1, 0.1, 0.7]])
    off = (0.2 + 0.1 + 0.3 + 0.2 + 0.1 + 0.1) / 6
    assert diagonal_dominance(matrix) == pytest.approx(abs(0.8 - off))


def test_gvd_and_de_id_values():
    rng = np.random.default_rng(0)
    oo = block_matrix(6, 4, 2.0, -1.0, rng, noise=0.5)
    aa = block_matrix(6, 4, 1.0, -0.5, rng, noise=0.5)  # anonymized speakers less distinct
    oa = block_matrix(6, 4, 0.0, 0.0, rng, noise=0.5)  # nothing links original to anonymized
    inputs = MetricInputs(similarity={"O-O": oo, "A-A": aa, "O-A": oa})
    for calibrate in (False, True):
        gvd = GVD(GVD.Params(calibrate=calibrate)).compute(inputs)[0]
        deid = DeID(DeID.Params(calibrate=calibrate)).compute(inputs)[0]
        d = gvd.details
        assert gvd.value == pytest.approx(10 * np.log10(d["D_A-A"] / d["D_O-O"]))
        assert gvd.value < 0 and gvd.unit == "dB"
        assert deid.value == pytest.approx(100 * (1 - deid.details["D_O-A"] / deid.details["D_O-O"]))
        assert deid.value > 80 and deid.unit == "%"
    same = MetricInputs(similarity={"O-O": oo, "A-A": oo, "O-A": oo})
    assert GVD().compute(same)[0].value == pytest.approx(0.0, abs=1e-12)
    assert DeID().compute(same)[0].value == pytest.approx(0.0, abs=1e-12)


def test_self_pairs_are_left_out_when_ids_are_known():
    m = block_matrix(3, 2, same=1.0, different=0.0)
    m.scores[np.eye(6, dtype=bool)] = 50.0  # an utterance against itself
    ids = np.array([f"u{i}" for i in range(6)])
    used = ids[:, None] != ids[None, :]
    with_self = speaker_similarity(m.scores, m.row_speakers, m.col_speakers, calibrated=False)
    without = speaker_similarity(m.scores, m.row_speakers, m.col_speakers, used, calibrated=False)
    assert np.allclose(np.diag(without.matrix), sigmoid(1.0))
    assert not np.allclose(np.diag(with_self.matrix), sigmoid(1.0))


def test_missing_or_unusable_matrices_are_one_sentence_errors():
    oo = block_matrix(3, 2, 1.0, 0.0)
    with pytest.raises(MetricInputError, match="A-A"):
        GVD().compute(MetricInputs(similarity={"O-O": oo}))
    flat = block_matrix(3, 2, 0.0, 0.0)
    with pytest.raises(MetricInputError, match="diagonal dominance"):
        DeID().compute(MetricInputs(similarity={"O-O": flat, "O-A": oo}))
    one = SimilarityMatrix(np.ones((2, 2)), np.array(["a", "a"]), np.array(["a", "a"]))
    with pytest.raises(MetricInputError, match="at least two"):
        GVD().compute(MetricInputs(similarity={"O-O": one, "A-A": one}))
