"""Scoring back-ends: cosine, two-covariance PLDA, and adaptive symmetric score normalisation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vpeval_torch.validation import length_normalise


def cosine_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", length_normalise(a), length_normalise(b))


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return length_normalise(a) @ length_normalise(b).T


@dataclass
class Plda:
    """Two-covariance PLDA (Brümmer & de Villiers 2010) on centred, LDA-projected, length-normalised vectors.

    z = y + e with speaker variable y ~ N(0, B) and residual e ~ N(0, W); the score of a pair is the log
    likelihood ratio of "same speaker" over "different speakers" (up to a constant).
    """

    mean: np.ndarray  # [D] training mean (before LDA)
    projection: np.ndarray  # [D, d] LDA
    between: np.ndarray  # [d, d] B
    within: np.ndarray  # [d, d] W

    def __post_init__(self) -> None:
        total = self.between + self.within
        total_inv = np.linalg.inv(total)
        # Blocks of the inverse of a same-speaker pair's joint covariance [[T, B], [B, T]], T = B + W.
        schur_inv = np.linalg.inv(total - self.between @ total_inv @ self.between)
        self.q = total_inv - schur_inv
        self.p = total_inv @ self.between @ schur_inv

    @classmethod
    def fit(cls, vectors: np.ndarray, speakers: np.ndarray, dim: int, floor: float = 1e-6) -> Plda:
        vectors = length_normalise(vectors)
        mean = vectors.mean(axis=0)
        x = vectors - mean
        labels, index = np.unique(speakers, return_inverse=True)
        if labels.size < 2:
            raise ValueError("PLDA needs training vectors of two or more speakers")
        dim = int(min(dim, labels.size - 1, x.shape[1]))
        between, within = _scatter(x, index, labels.size)
        within += floor * np.trace(within) / within.shape[0] * np.eye(within.shape[0])
        # LDA: generalised eigenvectors of (between, within), largest first.
        w_inv = np.linalg.inv(np.linalg.cholesky(within))
        values, vecs = np.linalg.eigh(w_inv @ between @ w_inv.T)
        projection = w_inv.T @ vecs[:, np.argsort(values)[::-1][:dim]]
        z = length_normalise(x @ projection)
        b, w = _scatter(z, index, labels.size)
        return cls(mean, projection, b + floor * np.eye(dim), w + floor * np.eye(dim))

    def transform(self, vectors: np.ndarray) -> np.ndarray:
        return length_normalise((length_normalise(vectors) - self.mean) @ self.projection)

    def score_transformed(self, za: np.ndarray, zb: np.ndarray) -> np.ndarray:
        return (
            0.5 * np.einsum("ij,jk,ik->i", za, self.q, za)
            + 0.5 * np.einsum("ij,jk,ik->i", zb, self.q, zb)
            + np.einsum("ij,jk,ik->i", za, self.p, zb)
        )

    def score_pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.score_transformed(self.transform(a), self.transform(b))

    def score_matrix(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        za, zb = self.transform(a), self.transform(b)
        qa = 0.5 * np.einsum("ij,jk,ik->i", za, self.q, za)
        qb = 0.5 * np.einsum("ij,jk,ik->i", zb, self.q, zb)
        return qa[:, None] + qb[None, :] + za @ self.p @ zb.T

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "plda_mean": self.mean,
            "plda_projection": self.projection,
            "plda_between": self.between,
            "plda_within": self.within,
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Plda:
        return cls(arrays["plda_mean"], arrays["plda_projection"], arrays["plda_between"], arrays["plda_within"])


def _scatter(x: np.ndarray, index: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Between-class covariance of the class means and pooled within-class covariance."""
    counts = np.bincount(index, minlength=classes).astype(np.float64)
    sums = np.zeros((classes, x.shape[1]))
    np.add.at(sums, index, x)
    means = sums / counts[:, None]
    centred_means = means - x.mean(axis=0)
    between = (centred_means * counts[:, None]).T @ centred_means / counts.sum()
    residual = x - means[index]
    within = residual.T @ residual / x.shape[0]
    return between, within


@dataclass
class Backend:
    """Scores row-wise pairs of side vectors: cosine or PLDA, optionally AS-norm against a cohort."""

    kind: str = "cosine"
    plda: Plda | None = None
    cohort: np.ndarray | None = None  # [S, D] training speakers' mean embeddings
    top_k: int = 200

    def raw_pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.kind == "plda" and self.plda is not None:
            return self.plda.score_pairs(a, b)
        return cosine_pairs(a, b)

    def raw_matrix(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.kind == "plda" and self.plda is not None:
            return self.plda.score_matrix(a, b)
        return cosine_matrix(a, b)

    def score(self, enroll: np.ndarray, test: np.ndarray) -> np.ndarray:
        scores = self.raw_pairs(enroll, test)
        if self.cohort is None:
            return scores
        mean_e, std_e = self._cohort_stats(enroll)
        mean_t, std_t = self._cohort_stats(test)
        return 0.5 * ((scores - mean_e) / std_e + (scores - mean_t) / std_t)

    def _cohort_stats(self, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and standard deviation of each vector's top-k cohort scores (Matejka et al. 2017)."""
        cohort_scores = self.raw_matrix(vectors, self.cohort)
        k = min(self.top_k, cohort_scores.shape[1])
        top = -np.partition(-cohort_scores, k - 1, axis=1)[:, :k]
        return top.mean(axis=1), np.maximum(top.std(axis=1), 1e-6)

    def to_arrays(self) -> dict[str, np.ndarray]:
        arrays: dict[str, np.ndarray] = {"kind": np.array(self.kind), "top_k": np.array(self.top_k)}
        if self.plda is not None:
            arrays.update(self.plda.to_arrays())
        if self.cohort is not None:
            arrays["cohort"] = self.cohort
        return arrays

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> Backend:
        plda = Plda.from_arrays(arrays) if "plda_between" in arrays else None
        cohort = arrays.get("cohort")
        return cls(str(arrays["kind"]), plda, cohort, int(arrays["top_k"]))
