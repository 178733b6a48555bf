"""Codebooks learned with k-means: a single vector quantizer and a residual vector quantizer.

The codebooks are plain float32 arrays, so they are saved with numpy and restored without pickle.
Nearest-codeword search is the Euclidean argmin that neural codecs (Mimi, Higgs, GLM-4-Voice) use.
"""

from __future__ import annotations

import numpy as np

from vpeval.errors import DataError


def nearest(frames: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """Index of the nearest codeword [N] for each frame [N, D] (squared Euclidean distance)."""
    frames = np.asarray(frames, dtype=np.float32)
    # |x - c|^2 = |x|^2 - 2 x.c + |c|^2; |x|^2 does not change the argmin.
    distances = (codebook * codebook).sum(axis=1)[None, :] - 2.0 * frames @ codebook.T
    return distances.argmin(axis=1).astype(np.int64)


def fit_codebook(frames: np.ndarray, size: int, rng: np.random.Generator, what: str) -> np.ndarray:
    """k-means codebook [size, D] on frames [N, D] with mini-batch k-means seeded from `rng`."""
    from sklearn.cluster import MiniBatchKMeans

    if len(frames) < size:
        raise DataError(
            f"The {what} fit corpus gives {len(frames)} frames, fewer than codebook_size={size}; "
            "give fit() more speech or lower codebook_size."
        )
    kmeans = MiniBatchKMeans(
        n_clusters=size,
        init="k-means++",
        n_init=1,
        batch_size=max(1024, 4 * size),
        max_iter=50,
        random_state=int(rng.integers(2**31 - 1)),
    )
    kmeans.fit(np.asarray(frames, dtype=np.float32))
    return kmeans.cluster_centers_.astype(np.float32)


def subsample(frames: np.ndarray, limit: int, rng: np.random.Generator) -> np.ndarray:
    """At most `limit` frames, drawn without replacement (k-means cost grows with N)."""
    if len(frames) <= limit:
        return frames
    return frames[np.sort(rng.choice(len(frames), size=limit, replace=False))]


def fit_residual(frames: np.ndarray, stages: int, size: int, rng: np.random.Generator, what: str) -> np.ndarray:
    """Residual VQ codebooks [stages, size, D]: stage q clusters what stages < q left unexplained."""
    residual = np.asarray(frames, dtype=np.float32).copy()
    books = []
    for _ in range(stages):
        book = fit_codebook(residual, size, rng, what)
        residual -= book[nearest(residual, book)]
        books.append(book)
    return np.stack(books)


def encode_residual(frames: np.ndarray, books: np.ndarray) -> np.ndarray:
    """Tokens [N, stages] of frames [N, D] under residual codebooks [stages, size, D]."""
    residual = np.asarray(frames, dtype=np.float32).copy()
    tokens = np.empty((len(residual), len(books)), dtype=np.int64)
    for q, book in enumerate(books):
        tokens[:, q] = nearest(residual, book)
        residual -= book[tokens[:, q]]
    return tokens


def decode_residual(tokens: np.ndarray, books: np.ndarray) -> np.ndarray:
    """The sum of the chosen codewords of every stage [N, D]."""
    return sum(books[q][tokens[:, q]] for q in range(tokens.shape[1]))
