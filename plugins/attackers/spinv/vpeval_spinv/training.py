"""SpInv's two training stages (seed 002, section III-C): Stage A distillation (eq. 6) and Stage B
ArcMargin fine-tuning (eq. 12), with the EMA teacher fed the global views and the frozen target
encoder fed the teacher view."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from vpeval_spinv import losses
from vpeval_spinv.model import DinoHead, FrameBatch, Recovery
from vpeval_spinv.teacher import arc_margin, ema_momentum, ema_update, update_center


@dataclass(frozen=True)
class StageSettings:
    name: str  # "A" or "B"
    epochs: int
    lr: float
    weights: dict[str, float]  # loss term -> weight; "spk" only in Stage B


@dataclass(frozen=True)
class DistillSettings:
    student_temperature: float
    teacher_temperature: float
    center_momentum: float
    ema_start: float
    ema_end: float
    var_gamma: float
    var_epsilon: float
    margin: float
    margin_ramp_start: int
    margin_ramp_end: int
    arc_scale: float
    batch_size: int


@dataclass
class Views:
    """One batch's five views, already through the frontend (local, global) and the target encoder."""

    local: list[FrameBatch]  # V_s = 2
    global_: list[FrameBatch]  # V_g = 2
    target: torch.Tensor  # [B, d_z]
    labels: torch.Tensor  # [B] speaker index


@dataclass
class SpInvNetworks:
    """Student G + DINO head, their EMA copies, the DINO centre and Stage B's speaker classifier."""

    student: Recovery
    dino: DinoHead
    teacher_aub: nn.Module = field(init=False)
    teacher_dino: nn.Module = field(init=False)
    center: torch.Tensor = field(init=False)
    classifier: nn.Parameter | None = None

    def __post_init__(self) -> None:
        self.teacher_aub = copy.deepcopy(self.student.aub).eval()
        self.teacher_dino = copy.deepcopy(self.dino).eval()
        for p in [*self.teacher_aub.parameters(), *self.teacher_dino.parameters()]:
            p.requires_grad_(False)
        prototypes = self.dino.prototypes.weight.shape[0]
        self.center = torch.zeros(prototypes)

    def to(self, device: str) -> SpInvNetworks:
        """Every network, the centre and the classifier on `device` (the run's)."""
        for name in ("student", "dino", "teacher_aub", "teacher_dino"):
            getattr(self, name).to(device)
        self.center = self.center.to(device)
        if self.classifier is not None:
            self.classifier.data = self.classifier.data.to(device)
        return self

    def snapshot(self) -> dict:
        """Copies of every trained tensor (student, DINO head, teachers, centre, classifier)."""
        parts = {
            "student": self.student,
            "dino": self.dino,
            "teacher_aub": self.teacher_aub,
            "teacher_dino": self.teacher_dino,
        }
        state = {name: copy.deepcopy(module.state_dict()) for name, module in parts.items()}
        state["center"] = self.center.clone()
        return state

    def restore(self, state: dict) -> None:
        for name in ("student", "dino", "teacher_aub", "teacher_dino"):
            getattr(self, name).load_state_dict(state[name])
        self.center = state["center"].clone()

    def teacher_step(self, momentum: float) -> None:
        ema_update(self.teacher_aub, self.student.aub, momentum)
        ema_update(self.teacher_dino, self.dino, momentum)


def stage_losses(
    nets: SpInvNetworks, views: Views, settings: DistillSettings, margin: float | None
) -> dict[str, torch.Tensor]:
    """Every loss term of one batch. `margin` None: Stage A (no speaker term).

    Also DINO's collapse monitors (in no stage's weights): the mean entropy of the teacher's targets q
    and of the student's p, and the entropy of q averaged over the batch. Working DINO has sharp
    per-utterance targets (low teacher entropy) spread over many prototypes (high batch entropy);
    both near ln K is the uniform collapse, both low the collapse onto one prototype, and in either
    eq. 9 carries no information about the utterance.
    """
    outputs = [nets.student(batch) for batch in views.local]
    recovered = torch.stack([z for z, _, _ in outputs])  # [V_s, B, d_z]
    cls = torch.stack([h for _, h, _ in outputs])  # [V_s, B, d_h]
    student_logits = torch.stack([nets.dino(o) for _, _, o in outputs])  # [V_s, B, K]
    with torch.no_grad():
        teacher_logits = torch.stack([nets.teacher_dino(nets.teacher_aub(batch)[1]) for batch in views.global_])
    teacher_probs = losses.teacher_distribution(teacher_logits, nets.center, settings.teacher_temperature)
    terms = {
        "align": losses.align_loss(recovered, views.target),
        "rel": losses.relational_loss(recovered, views.target),
        "dino": losses.dino_loss(student_logits, teacher_probs, settings.student_temperature),
        "var": losses.variance_loss(cls, settings.var_gamma, settings.var_epsilon),
        "cov": losses.covariance_loss(cls),
    }
    with torch.no_grad():
        student_probs = torch.softmax(student_logits / settings.student_temperature, dim=-1)
        terms["teacher_entropy"] = _entropy(teacher_probs)
        terms["teacher_batch_entropy"] = _entropy(teacher_probs.reshape(-1, teacher_probs.shape[-1]).mean(dim=0))
        terms["student_entropy"] = _entropy(student_probs)
    if margin is not None:
        terms["spk"] = losses.speaker_loss(cls, nets.classifier, views.labels, margin, settings.arc_scale)
    nets.center = update_center(nets.center, teacher_logits, settings.center_momentum)
    return terms


def _entropy(probs: torch.Tensor) -> torch.Tensor:
    return -(probs * probs.clamp_min(1e-12).log()).sum(dim=-1).mean()


def weighted_sum(terms: dict[str, torch.Tensor], weights: dict[str, float]) -> torch.Tensor:
    """Eq. 6 (Stage A) or eq. 12 (Stage B): sum_j weight_j * L_j over the stage's terms."""
    return sum(weights[name] * terms[name] for name in weights)


def run_stage(
    nets: SpInvNetworks,
    stage: StageSettings,
    settings: DistillSettings,
    count: int,
    make_views: Callable[[Sequence[int], np.random.Generator], Views],
    rng_for_epoch: Callable[[int], np.random.Generator],
    log: Callable[[str], None],
    validate: Callable[[], float] | None = None,
    *,
    autocast: Callable[[], AbstractContextManager] = nullcontext,
    scaler: torch.amp.GradScaler | None = None,
    ema_span: tuple[int, int] | None = None,
) -> list[dict[str, float]]:
    """Train one stage with Adam over `count` utterances; returns per-epoch mean loss terms.

    With `validate` (a score, higher is better, computed after every epoch) the networks end in the
    state of the best epoch ("the selected Stage A checkpoint" of section III-C), else the last.
    Forward passes run under `autocast()` (the run's precision on a GPU); `scaler` scales fp16 losses.
    ema_span (first step, total steps): where this stage sits on an EMA schedule spanning both stages
    (ema_schedule: whole-training); None: the schedule runs from ema_start to ema_end within this stage.
    """
    if stage.epochs == 0:
        return []
    batch = min(settings.batch_size, count)
    batches_per_epoch = max(1, count // batch)  # the last, short batch is dropped (eq. 8 needs B >= 2)
    total_steps = stage.epochs * batches_per_epoch
    params = [*nets.student.parameters(), *nets.dino.parameters()]
    if stage.name == "B":
        params.append(nets.classifier)
    optimizer = torch.optim.Adam(params, lr=stage.lr)
    nets.student.train()
    nets.dino.train()
    history = []
    step = 0
    best = None
    for epoch in range(stage.epochs):
        rng = rng_for_epoch(epoch)
        order = rng.permutation(count)
        margin = (
            arc_margin(epoch, settings.margin, settings.margin_ramp_start, settings.margin_ramp_end)
            if stage.name == "B"
            else None
        )
        sums: dict[str, float] = {}
        started = time.perf_counter()
        for b in range(batches_per_epoch):
            views = make_views(order[b * batch : (b + 1) * batch].tolist(), rng)
            with autocast():
                terms = stage_losses(nets, views, settings, margin)
                loss = weighted_sum(terms, stage.weights)
            optimizer.zero_grad(set_to_none=True)
            if scaler is None:
                loss.backward()
                optimizer.step()
            else:
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            first, span = ema_span or (0, total_steps)
            nets.teacher_step(ema_momentum(first + step, span, settings.ema_start, settings.ema_end))
            step += 1
            for name, value in {**terms, "total": loss}.items():
                sums[name] = sums.get(name, 0.0) + float(value.detach())
        means = {name: value / batches_per_epoch for name, value in sums.items()}
        means["seconds"] = time.perf_counter() - started  # training only, before validation
        if validate is not None:
            means["validation"] = validate()
            if best is None or means["validation"] > best[0]:
                best = (means["validation"], epoch, nets.snapshot())
        history.append({"stage": stage.name, "epoch": epoch, **means})
        log(
            f"spinv stage {stage.name} epoch {epoch + 1}/{stage.epochs}: "
            + ", ".join(f"{k} {v:.4f}" for k, v in means.items())
        )
    if best is not None and best[1] != stage.epochs - 1:
        nets.restore(best[2])
        log(f"spinv stage {stage.name}: keeping epoch {best[1] + 1} (validation {best[0]:.4f})")
    nets.student.eval()
    nets.dino.eval()
    return history
