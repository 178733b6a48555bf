"""Fusion of the audio embedding with text or prosody (seed 000, III-A2, III-A3, III-B2, III-B3)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class ConcatFusion(nn.Module):
    """Each modality projected to a shared size and layer-normalised, concatenated, projected to the output (III-A2)."""

    def __init__(self, audio_dim: int, other_dim: int, shared: int, out: int):
        super().__init__()
        self.audio = nn.Sequential(nn.Linear(audio_dim, shared), nn.LayerNorm(shared))
        self.other = nn.Sequential(nn.Linear(other_dim, shared), nn.LayerNorm(shared))
        self.out = nn.Linear(2 * shared, out)

    def forward(self, audio: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        return self.out(torch.cat([self.audio(audio), self.other(other)], dim=-1))


class WeightedConcatFusion(ConcatFusion):
    """ConcatFusion with fixed weights on the audio and text embeddings before the concatenation (III-B2:
    "assigning different weights to the audio and text embeddings prior to fusion", (0.5, 0.5), (0.2, 0.8)).

    Each modality is projected and layer-normalised (unit scale), multiplied by its weight (the two summing
    to 1), then concatenated and projected: the weights set each modality's share of the fused input at the
    start of training, and the two-stage training adapts the output projection to them."""

    def __init__(self, audio_dim: int, other_dim: int, shared: int, out: int, weights: tuple[float, float]):
        super().__init__(audio_dim, other_dim, shared, out)
        total = float(sum(weights))
        self.weights = (float(weights[0]) / total, float(weights[1]) / total)  # plain floats: not in the state dict

    def forward(self, audio: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        wa, wt = self.weights
        return self.out(torch.cat([wa * self.audio(audio), wt * self.other(other)], dim=-1))


class ProsodyFusion(nn.Module):
    """The prosodic vector projected to a learned embedding, concatenated with the audio embedding,
    then a linear projection (III-A3, III-B3). Prosody is standardised with training statistics first."""

    def __init__(self, audio_dim: int, prosody_in: int, prosody_dim: int, out: int):
        super().__init__()
        self.prosody = nn.Linear(prosody_in, prosody_dim)
        self.out = nn.Linear(audio_dim + prosody_dim, out)

    def forward(self, audio: torch.Tensor, prosody: torch.Tensor) -> torch.Tensor:
        return self.out(torch.cat([audio, self.prosody(prosody)], dim=-1))


def weighted_vector(audio: np.ndarray, text: np.ndarray, weights: tuple[float, float]) -> np.ndarray:
    """[sqrt(w_a) a/|a|, sqrt(w_t) t/|t|] / sqrt(w_a + w_t): its cosine with another such vector is
    exactly (w_a cos_a + w_t cos_t) / (w_a + w_t), a fixed-weight score fusion (fusion: weighted-score; not
    the paper's, which weights the embeddings before a fusion layer: WeightedConcatFusion)."""
    wa, wt = (float(w) / sum(weights) for w in weights)
    a = audio / max(np.linalg.norm(audio), 1e-12)
    t = text / max(np.linalg.norm(text), 1e-12)
    return np.concatenate([np.sqrt(wa) * a, np.sqrt(wt) * t])
