"""GVD and De-ID (VoicePrivacy 2022) as Metric plugins reading utterance-by-utterance score matrices."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from vpeval.api import Metric, MetricInputs, Params, SimilarityMatrix
from vpeval.errors import MetricInputError
from vpeval.types import MetricResult
from vpeval_scoring.gvd import SpeakerSimilarity, de_id, gvd, speaker_similarity


class SimilarityParams(Params):
    calibrate: bool = Field(
        True, description="PAV-calibrate the scores into LLRs first (VPC 2022); False reads them as LLRs (VoicePAT)."
    )


class SimilarityMetric(Metric):
    needs: ClassVar[str] = "similarity"
    protocols: ClassVar[tuple[str, str]] = ("O-O", "O-O")
    Params = SimilarityParams

    def _similarity(self, inputs: MetricInputs, protocol: str) -> SpeakerSimilarity:
        matrix = inputs.similarity.get(protocol)
        if matrix is None:
            raise MetricInputError(
                f"Metric {self.name} needs the {protocol} score matrix, "
                f"but only {sorted(inputs.similarity) or 'none'} were given."
            )
        return _speaker_similarity(matrix, protocol, self.name, self.params.calibrate)

    def _dominances(self, inputs: MetricInputs) -> tuple[float, float, dict]:
        first, second = (self._similarity(inputs, p) for p in self.protocols)
        d1, d2 = first.diagonal_dominance, second.diagonal_dominance
        if d1 == 0:
            raise MetricInputError(
                f"Metric {self.name}: the {self.protocols[0]} similarity matrix has no diagonal dominance "
                "(same- and different-speaker pairs score alike), so the ratio is undefined."
            )
        details = {
            f"D_{self.protocols[0]}": d1,
            f"D_{self.protocols[1]}": d2,
            "speakers": len(first.speakers),
            "calibrated": self.params.calibrate,
        }
        return d1, d2, details


class GVD(SimilarityMetric):
    """Gain of voice distinctiveness, dB: 10 log10(D(A-A) / D(O-O)) of the speaker similarity matrices."""

    name = "gvd"
    protocols = ("O-O", "A-A")

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        d_oo, d_aa, details = self._dominances(inputs)
        if d_aa == 0:
            return [MetricResult(self.name, float("-inf"), "all", unit="dB", details=details)]
        return [MetricResult(self.name, gvd(d_aa, d_oo), "all", unit="dB", details=details)]


class DeID(SimilarityMetric):
    """De-identification, %: 1 - D(O-A) / D(O-O) of the speaker similarity matrices."""

    name = "de-id"
    protocols = ("O-O", "O-A")

    def compute(self, inputs: MetricInputs) -> list[MetricResult]:
        d_oo, d_oa, details = self._dominances(inputs)
        return [MetricResult(self.name, 100 * de_id(d_oa, d_oo), "all", unit="%", details=details)]


def _speaker_similarity(matrix: SimilarityMatrix, protocol: str, metric: str, calibrate: bool) -> SpeakerSimilarity:
    scores = np.asarray(matrix.scores, dtype=np.float64)
    rows, cols = np.asarray(matrix.row_speakers), np.asarray(matrix.col_speakers)
    if scores.ndim != 2 or scores.shape != (len(rows), len(cols)):
        raise MetricInputError(
            f"Metric {metric}: the {protocol} matrix is {scores.shape} "
            f"but has {len(rows)} row and {len(cols)} column speakers."
        )
    if not np.isfinite(scores).all():
        raise MetricInputError(
            f"Metric {metric}: the {protocol} matrix has NaN or infinite scores; fix the scoring step."
        )
    used = None
    row_ids, col_ids = getattr(matrix, "row_ids", None), getattr(matrix, "col_ids", None)
    if row_ids is not None and col_ids is not None:
        # VPC 2022 leaves out an utterance scored against itself.
        used = np.asarray(row_ids).astype(str)[:, None] != np.asarray(col_ids).astype(str)[None, :]
    common = set(rows.astype(str)) & set(cols.astype(str))
    if len(common) < 2:
        raise MetricInputError(
            f"Metric {metric}: the {protocol} matrix has {len(common)} speaker(s) on both sides; it needs at least two."
        )
    same = rows.astype(str)[:, None] == cols.astype(str)[None, :]
    mask = np.ones(scores.shape, dtype=bool) if used is None else used
    if not (same & mask).any() or not (~same & mask).any():
        raise MetricInputError(f"Metric {metric}: the {protocol} matrix needs both same- and different-speaker pairs.")
    sim = speaker_similarity(scores, rows, cols, used, calibrate)
    empty = np.isnan(np.diag(sim.matrix))
    if empty.any():
        who = [s for s, e in zip(sim.speakers, empty, strict=True) if e][:3]
        raise MetricInputError(
            f"Metric {metric}: in the {protocol} matrix speaker(s) {', '.join(who)} have no same-speaker pair; "
            "give every speaker at least two utterances."
        )
    return sim
