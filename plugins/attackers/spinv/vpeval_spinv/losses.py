"""SpInv's loss terms, one function per equation of seed 002 (section III, eq. 7-13).

Shapes: B utterances per batch, V_s = 2 local views. `recovered` is [V_s, B, d_z] (ẑ_{i,v}),
`target` is [B, d_z] (z_i from the teacher view), `cls` is [V_s, B, d_h] (h_{i,v}).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def align_loss(recovered: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Eq. 7: mean over views and utterances of 1 - cos(ẑ_{i,v}, z_i)."""
    cos = F.cosine_similarity(recovered, target.unsqueeze(0).expand_as(recovered), dim=-1)
    return (1.0 - cos).mean()


def _cosine_matrix(x: torch.Tensor) -> torch.Tensor:
    unit = F.normalize(x, dim=-1)
    return unit @ unit.transpose(-1, -2)


def relational_loss(recovered: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Eq. 8: squared difference of the pairwise cosine matrices of ẑ (per view) and z over i != j,
    divided by V_s B (B - 1)."""
    views, batch = recovered.shape[0], recovered.shape[1]
    if batch < 2:
        raise ValueError("the relational loss (eq. 8) needs at least two utterances per batch")
    diff = _cosine_matrix(recovered) - _cosine_matrix(target).unsqueeze(0)
    off_diagonal = ~torch.eye(batch, dtype=torch.bool, device=recovered.device)
    return (diff.pow(2) * off_diagonal).sum() / (views * batch * (batch - 1))


def teacher_distribution(teacher_logits: torch.Tensor, center: torch.Tensor, temperature: float) -> torch.Tensor:
    """DINO's centred and sharpened teacher targets q = softmax((t - c) / tau_t), without gradient."""
    return F.softmax((teacher_logits.detach() - center) / temperature, dim=-1)


def dino_loss(student_logits: torch.Tensor, teacher_probs: torch.Tensor, temperature: float) -> torch.Tensor:
    """Eq. 9: -1/(B |P|) sum over (global u, local v) pairs, utterances and prototypes of
    sg(q_{i,u,k}) log p_{i,v,k}.

    student_logits [V_s, B, K] (p = softmax(logits / tau_s)); teacher_probs [V_g, B, K] (q).
    """
    log_p = F.log_softmax(student_logits / temperature, dim=-1)  # [V_s, B, K]
    q = teacher_probs.detach()  # sg(.)
    # sum over all (u, v) pairs at once: [V_g, 1, B, K] * [1, V_s, B, K]
    cross = -(q.unsqueeze(1) * log_p.unsqueeze(0)).sum(dim=-1)  # [V_g, V_s, B]
    pairs = q.shape[0] * log_p.shape[0]
    return cross.sum() / (log_p.shape[1] * pairs)


def variance_loss(cls: torch.Tensor, gamma: float, epsilon: float) -> torch.Tensor:
    """Eq. 10: hinge on the per-dimension standard deviation sqrt(Var(H_{:,j}) + eps) below gamma,
    averaged over dimensions and views (VICReg's variance term; unbiased variance over the batch)."""
    std = torch.sqrt(cls.var(dim=1) + epsilon)  # [V_s, d_h]
    return F.relu(gamma - std).mean()


def covariance_loss(cls: torch.Tensor) -> torch.Tensor:
    """Eq. 11: sum of squared off-diagonal covariances of H^(v), divided by d_h, averaged over views
    (VICReg's covariance term; covariance normalised by B - 1)."""
    views, batch, dim = cls.shape
    centred = cls - cls.mean(dim=1, keepdim=True)
    cov = centred.transpose(1, 2) @ centred / (batch - 1)  # [V_s, d_h, d_h]
    off_diagonal = ~torch.eye(dim, dtype=torch.bool, device=cls.device)
    return (cov.pow(2) * off_diagonal).sum() / (views * dim)


def arcmargin_logits(
    cls: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, margin: float, scale: float
) -> torch.Tensor:
    """beta_{i,v,c} = s cos(alpha_{i,v,c} + m [c = y_i]), alpha = arccos(h̄ᵀ w̄_c) (eq. 13's logits).

    cls [V_s, B, d_h], weight [C, d_h], labels [B]. cos(alpha + m) is expanded as
    cos(alpha) cos(m) - sin(alpha) sin(m), which equals the equation and has a finite gradient at
    cos(alpha) = +-1, where arccos' does not.
    """
    cos = F.normalize(cls, dim=-1) @ F.normalize(weight, dim=-1).T  # [V_s, B, C]
    cos = cos.clamp(-1.0, 1.0)
    sin = torch.sqrt((1.0 - cos.pow(2)).clamp_min(1e-12))
    shifted = cos * torch.cos(torch.tensor(margin)) - sin * torch.sin(torch.tensor(margin))
    is_target = F.one_hot(labels, weight.shape[0]).bool().unsqueeze(0).expand_as(cos)
    return scale * torch.where(is_target, shifted, cos)


def speaker_loss(
    cls: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, margin: float, scale: float
) -> torch.Tensor:
    """Eq. 13: cross-entropy of the ArcMargin logits over speakers, averaged over utterances and local views."""
    logits = arcmargin_logits(cls, weight, labels, margin, scale)
    views = logits.shape[0]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.repeat(views))
