"""Voice similarity matrices, diagonal dominance, GVD and De-ID (Noe et al. 2020; VoicePrivacy 2022).

Every utterance pair of a protocol is scored; the scores are PAV-calibrated into LLRs with same-speaker
pairs as targets (Laplace-smoothed, so every LLR is finite); the speaker similarity S(i, j) is the
sigmoid of the mean LLR over all pairs of speaker i's (row) and speaker j's (column) utterances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval_scoring.pav import pav
from vpeval_scoring.sorted_trials import SortedTrials


@dataclass
class SpeakerSimilarity:
    matrix: np.ndarray  # [K, K], rows and columns in `speakers` order
    speakers: list[str]
    pairs: int  # utterance pairs that went in

    @property
    def diagonal_dominance(self) -> float:
        return diagonal_dominance(self.matrix)


def calibrate(scores: np.ndarray, same_speaker: np.ndarray) -> np.ndarray:
    """PAV LLRs (natural log, Laplace-smoothed) of each score, same-speaker pairs as targets."""
    trials = SortedTrials(scores, same_speaker)
    return trials.per_trial(pav(trials.tally(), laplace=True).group_llr())


def speaker_similarity(
    scores: np.ndarray,
    row_speakers: np.ndarray,
    col_speakers: np.ndarray,
    used: np.ndarray | None = None,
    calibrated: bool = True,
) -> SpeakerSimilarity:
    """The speaker-by-speaker similarity matrix of an utterance-by-utterance score matrix.

    `used` masks the pairs that count (VPC 2022 leaves out an utterance paired with itself). Speakers on
    only one side are left out. `calibrated=False` reads the scores as LLRs already (VoicePAT's reading).
    """
    scores = np.asarray(scores, dtype=np.float64)
    row_speakers = np.asarray(row_speakers).astype(str)
    col_speakers = np.asarray(col_speakers).astype(str)
    speakers = sorted(set(row_speakers) & set(col_speakers))
    index = {s: k for k, s in enumerate(speakers)}
    rows = np.array([index.get(s, -1) for s in row_speakers])
    cols = np.array([index.get(s, -1) for s in col_speakers])
    mask = np.ones(scores.shape, dtype=bool) if used is None else np.asarray(used, dtype=bool).copy()
    mask &= (rows >= 0)[:, None] & (cols >= 0)[None, :]
    same = rows[:, None] == cols[None, :]
    llr = np.zeros_like(scores)
    picked = scores[mask]
    llr[mask] = calibrate(picked, same[mask]) if calibrated else picked
    # Sums per speaker pair through one-hot projections: [K, R] @ [R, C] @ [C, K].
    k = len(speakers)
    row_hot = np.zeros((k, len(rows)))
    row_hot[rows[rows >= 0], np.flatnonzero(rows >= 0)] = 1.0
    col_hot = np.zeros((len(cols), k))
    col_hot[np.flatnonzero(cols >= 0), cols[cols >= 0]] = 1.0
    counts = row_hot @ mask.astype(np.float64) @ col_hot
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        sums = row_hot @ np.where(mask, llr, 0.0) @ col_hot
        if np.isfinite(sums).all():
            mean_llr = sums / counts
        else:
            # LLRs near 1e308 (calibrated=False) overflow the sums (and inf x 0 in the projections is NaN):
            # the means of the LLRs divided by their largest magnitude, scaled back (a mean is no larger)
            top = float(np.abs(llr[mask]).max())
            mean_llr = (row_hot @ np.where(mask, llr / top, 0.0) @ col_hot) / counts * top
        similarity = 1.0 / (1.0 + np.exp(-mean_llr))  # exp overflows to inf for mean LLRs below -709: similarity 0
    return SpeakerSimilarity(similarity, speakers, int(mask.sum()))


def diagonal_dominance(matrix: np.ndarray) -> float:
    """|mean of the diagonal - mean of the off-diagonal entries|."""
    k = matrix.shape[0]
    diag = np.trace(matrix) / k
    off = (matrix.sum() - np.trace(matrix)) / (k * (k - 1))
    return float(abs(diag - off))


def gvd(d_anon_anon: float, d_orig_orig: float) -> float:
    """Gain of voice distinctiveness, dB: 0 keeps distinctiveness, negative loses it."""
    return float(10.0 * np.log10(d_anon_anon / d_orig_orig))


def de_id(d_orig_anon: float, d_orig_orig: float) -> float:
    """De-identification as a fraction: 1 - D(orig-anon) / D(orig-orig); 1 is full de-identification."""
    return float(1.0 - d_orig_anon / d_orig_orig)
