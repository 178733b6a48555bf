"""Similarity rank disclosure (SRD): how much the rank of the true speaker tells about who spoke, in bits.

With N enrolled speakers, naming one takes log2 N bits. If the true speaker lands at rank r with
probability P(r), observing rank r leaves -log2 P(r) bits to find, so it discloses
d(r) = log2 N + log2 P(r) = log2(N P(r)) bits. The mean disclosure is sum_r P(r) d(r) = log2 N - H(P)
(the Kullback-Leibler divergence of P from the uniform 1/N, 0 when ranks are uniform), the maximum
disclosure max_r d(r), and the rank spread the share of ranks, %, more likely than chance (P(r) > 1/N).
P is the rank histogram itself, or, where it is sparse, a beta-binomial distribution over ranks 1..N
fitted to it by maximum likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import betaln, gammaln


@dataclass(frozen=True)
class Disclosure:
    mean: float  # bits
    maximum: float  # bits
    spread: float  # % of ranks above chance


def rank_counts(ranks: np.ndarray, population: int, weights: np.ndarray | None = None) -> np.ndarray:
    """How often (weighted) the true speaker lands at each rank 1..population: float [population]."""
    return np.bincount(np.asarray(ranks) - 1, weights=weights, minlength=population).astype(np.float64)


def empirical(counts: np.ndarray) -> np.ndarray:
    return counts / counts.sum()


def beta_binomial(counts: np.ndarray) -> np.ndarray:
    """Rank probabilities [N] of the beta-binomial on ranks 1..N (rank - 1 ~ BetaBinomial(N - 1, a, b))
    that maximises the likelihood of the (weighted) counts."""
    n = len(counts) - 1
    k = np.arange(n + 1, dtype=np.float64)
    log_choose = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    total = counts.sum()

    def negative_log_likelihood(log_ab: np.ndarray) -> float:
        a, b = np.exp(log_ab)
        return -float(counts @ (log_choose + betaln(k + a, n - k + b) - betaln(a, b))) / total

    # Start from the method of moments on the rank fraction (rank - 1) / n, clipped away from the edges.
    mean = float(np.clip((counts @ k) / (total * n), 1e-3, 1 - 1e-3)) if n else 0.5
    start = np.log([mean, 1 - mean])
    best = minimize(negative_log_likelihood, start, method="L-BFGS-B", bounds=[(-12.0, 12.0)] * 2)
    a, b = np.exp(best.x)
    logp = log_choose + betaln(k + a, n - k + b) - betaln(a, b)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def disclosure(probabilities: np.ndarray) -> Disclosure:
    """SRD of rank probabilities [N] (see the module docstring); 0 log 0 counts as 0."""
    p = np.asarray(probabilities, dtype=np.float64)
    n = len(p)
    seen = p > 0
    bits = np.log2(n * p[seen])
    return Disclosure(
        mean=float(p[seen] @ bits),
        maximum=float(bits.max()),
        spread=float(100.0 * np.count_nonzero(p > (1.0 + 1e-9) / n) / n),  # rounding is not above chance
    )
