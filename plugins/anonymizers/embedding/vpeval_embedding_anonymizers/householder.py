"""A stack of Householder reflections: an orthogonal linear map by construction (Miao et al., 2023).

H_k = I - 2 v_k v_k^T / ||v_k||^2 reflects across the hyperplane normal to v_k; a product of K of
them is orthogonal whatever the learnable v_k are, and D of them can express any orthogonal D x D
matrix. Applying them one by one costs O(K D) per vector instead of a D x D matrix product.
"""

from __future__ import annotations

import torch
from torch import nn


class HouseholderStack(nn.Module):
    def __init__(self, dim: int, reflections: int, generator: torch.Generator | None = None):
        super().__init__()
        self.vectors = nn.Parameter(torch.randn(reflections, dim, generator=generator, dtype=torch.float64))

    def reflect(self, x: torch.Tensor) -> torch.Tensor:
        """Apply H_1 first, then H_2, ... to the rows of x."""
        for v in self.vectors:
            x = x - 2.0 * (x @ v)[:, None] * v[None, :] / (v @ v)
        return x

    def matrix(self) -> torch.Tensor:
        """The D x D orthogonal matrix M = H_K ... H_1, so that y = M x for a column vector x."""
        dim = self.vectors.shape[1]
        return self.reflect(torch.eye(dim, dtype=self.vectors.dtype)).T

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Build M once (K reflections of a D x D identity) and rotate the whole batch with one product.
        return x.to(self.vectors.dtype) @ self.matrix().T
