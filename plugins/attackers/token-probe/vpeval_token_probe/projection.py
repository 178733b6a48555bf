"""Standardize, PCA, LDA: learned with scikit-learn, kept as one affine map (no pickle to store)."""

from __future__ import annotations

import numpy as np

from vpeval.errors import DataError


def fit_projection(
    vectors: np.ndarray, speakers: np.ndarray, pca_dim: int, lda_dim: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """(W [D, K], b [K]) such that x @ W + b is the LDA projection of standardized, PCA-reduced x.

    PCA keeps at most n_utterances - n_speakers dimensions so the within-speaker scatter LDA inverts
    is full rank; LDA uses the eigen solver with Ledoit-Wolf shrinkage, robust with few utterances.
    """
    from sklearn.decomposition import PCA
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    labels, y = np.unique(speakers, return_inverse=True)
    if len(labels) < 2:
        raise DataError("token-probe needs training speech of at least two speakers to learn its LDA projection.")
    x = np.asarray(vectors, dtype=np.float64)
    mean = x.mean(axis=0)
    scale = np.maximum(x.std(axis=0), 1e-6 + 1e-3 * x.std(axis=0).max())
    standard = (x - mean) / scale
    n_pca = int(max(1, min(pca_dim, len(x) - len(labels), standard.shape[1])))
    pca = PCA(n_components=n_pca, whiten=True, random_state=seed).fit(standard)
    reduced = pca.transform(standard)
    n_lda = int(max(1, min(lda_dim, len(labels) - 1, n_pca)))
    lda = LinearDiscriminantAnalysis(n_components=n_lda, solver="eigen", shrinkage="auto").fit(reduced, y)
    # Compose: every step is affine, so push the PCA basis through LDA to get one matrix.
    lda_offset = lda.transform(np.zeros((1, n_pca)))[0]
    lda_matrix = lda.transform(np.eye(n_pca)) - lda_offset
    pca_matrix = pca.components_.T / np.sqrt(pca.explained_variance_)[None, :]
    weight = (pca_matrix / scale[:, None]) @ lda_matrix
    bias = lda.transform(pca.transform(((0.0 - mean) / scale)[None, :]))[0]
    return weight, bias


def project(vectors: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """Length-normalized projections [U, K] (cosine scoring then compares directions only)."""
    z = np.asarray(vectors, dtype=np.float64) @ weight + bias
    return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)
