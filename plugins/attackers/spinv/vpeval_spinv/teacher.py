"""The EMA teacher's schedules and updates (seed 002, section IV: EMA momentum 0.996 -> 0.9995 on a
cosine schedule, DINO centre momentum 0.9) and Stage B's margin ramp."""

from __future__ import annotations

import math

import torch
from torch import nn


def ema_momentum(step: int, total_steps: int, start: float, end: float) -> float:
    """Cosine schedule from `start` at step 0 to `end` at the last step (DINO's form)."""
    if total_steps <= 1:
        return end
    progress = min(max(step / (total_steps - 1), 0.0), 1.0)
    return end - (end - start) * (math.cos(math.pi * progress) + 1.0) / 2.0


def ema_spans(stage_steps: list[int], whole_training: bool) -> list[tuple[int, int] | None]:
    """Each stage's (first step, total steps) on one EMA schedule over all stages (whole_training), or None
    per stage (each stage runs the schedule from start to end: `ema_schedule: per-stage`)."""
    if not whole_training:
        return [None] * len(stage_steps)
    return [(sum(stage_steps[:k]), sum(stage_steps)) for k in range(len(stage_steps))]


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, momentum: float) -> None:
    """teacher <- m * teacher + (1 - m) * student, parameter by parameter (buffers copied)."""
    for t, s in zip(teacher.parameters(), student.parameters(), strict=True):
        t.mul_(momentum).add_(s.detach(), alpha=1.0 - momentum)
    for t, s in zip(teacher.buffers(), student.buffers(), strict=True):
        t.copy_(s)


@torch.no_grad()
def update_center(center: torch.Tensor, teacher_logits: torch.Tensor, momentum: float) -> torch.Tensor:
    """DINO centre: c <- m c + (1 - m) mean of the teacher logits over the batch and the global views."""
    batch_mean = teacher_logits.reshape(-1, teacher_logits.shape[-1]).mean(dim=0)
    return center * momentum + batch_mean * (1.0 - momentum)


def arc_margin(epoch: int, final: float, ramp_start: int, ramp_end: int) -> float:
    """Stage B's angular margin: 0 until `ramp_start`, linear to `final` at `ramp_end`, then `final`.

    Epochs count from 0; the paper ramps between epochs 10 and 20 of 40.
    """
    if epoch <= ramp_start:
        return 0.0
    if epoch >= ramp_end:
        return final
    return final * (epoch - ramp_start) / (ramp_end - ramp_start)
