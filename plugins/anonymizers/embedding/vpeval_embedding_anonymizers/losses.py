"""Losses for training the OHNN anonymizer on pool speaker vectors."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def aam_softmax(
    embeddings: torch.Tensor, centres: torch.Tensor, targets: torch.Tensor, margin: float, scale: float
) -> torch.Tensor:
    """Additive angular margin softmax (ArcFace / AAM): target logit s cos(theta + m), others s cos(theta)."""
    cos = F.normalize(embeddings, dim=1) @ F.normalize(centres, dim=1).T
    theta = torch.acos(cos.clamp(-1 + 1e-7, 1 - 1e-7))
    target_logit = torch.cos(theta.gather(1, targets[:, None]) + margin)
    logits = cos.scatter(1, targets[:, None], target_logit) * scale
    return F.cross_entropy(logits, targets)


def cosine_to_original(rotated: torch.Tensor, original: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity between each rotated vector and its original (minimised)."""
    return F.cosine_similarity(rotated, original, dim=1).mean()
