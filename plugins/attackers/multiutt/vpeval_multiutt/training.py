"""Training on batches of speakers x N utterances with AAM softmax (seed 000, IV-C).

AdamW, gradient clipping, StepLR per epoch; every random choice comes from the experiment seed.
The same loop trains the audio networks end to end and the fusion layers on frozen encoders: the
caller passes a function that turns one batch into embeddings.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from vpeval.api import PluginContext
from vpeval.types import Utterance


@dataclass
class EpochRecord:
    stage: str
    epoch: int
    loss: float
    lr: float
    seconds: float
    validation_eer: float | None = None  # on the stage's validation list (validation.py), when there is one
    selected: bool = False  # the epoch whose weights the stage kept (lowest validation EER)


@dataclass
class History:
    epochs: list[EpochRecord] = field(default_factory=list)


class BestEpoch:
    """Model selection (IV-A): after each epoch, keep a copy of the weights if its validation EER is the
    lowest so far (the earlier epoch on a tie); at the end, put the kept weights back."""

    def __init__(self, module: nn.Module, validate: Callable[[], float] | None):
        self.module, self.validate = module, validate
        self.best: float | None = None
        self.state: dict | None = None
        self.record: EpochRecord | None = None

    def after_epoch(self, record: EpochRecord) -> None:
        if self.validate is None:
            return
        record.validation_eer = float(self.validate())
        if self.best is None or record.validation_eer < self.best:
            self.best, self.record = record.validation_eer, record
            self.state = {k: v.detach().clone() for k, v in self.module.state_dict().items()}

    def restore(self, context: PluginContext, stage: str) -> None:
        if self.state is None:
            return
        self.module.load_state_dict(self.state)
        self.record.selected = True
        context.log.info(
            "%s: kept epoch %d (validation EER %.2f%%)", stage, self.record.epoch, 100 * self.record.validation_eer
        )


class AamSoftmax(nn.Module):
    """speechbrain's cosine Classifier with LogSoftmaxWrapper(AdditiveAngularMargin), as vpeval's ECAPA."""

    def __init__(self, dim: int, speakers: int, margin: float, scale: float):
        super().__init__()
        from speechbrain.lobes.models.ECAPA_TDNN import Classifier
        from speechbrain.nnet.losses import AdditiveAngularMargin, LogSoftmaxWrapper

        self.head = Classifier(input_size=dim, out_neurons=speakers)
        self.cost = LogSoftmaxWrapper(AdditiveAngularMargin(margin=margin, scale=scale))

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.cost(self.head(embeddings.unsqueeze(1)), labels.unsqueeze(1))


@dataclass
class Episodes:
    """Draws batches of speakers x N utterances (IV-C: 64 speakers, N = 5) from a training set."""

    utterances: Sequence[Utterance]
    n: int
    speakers_per_batch: int
    batches_per_epoch: int | None = None

    def __post_init__(self) -> None:
        by_speaker: dict[str, list[int]] = {}
        for i, u in enumerate(self.utterances):
            by_speaker.setdefault(u.speaker, []).append(i)
        self.speakers = sorted(by_speaker)
        self.members = [np.array(by_speaker[s]) for s in self.speakers]

    @property
    def batch_speakers(self) -> int:
        return min(self.speakers_per_batch, len(self.speakers))

    def count(self) -> int:
        """Batches per epoch: as many as cover every utterance about once, unless fixed."""
        if self.batches_per_epoch:
            return self.batches_per_epoch
        return max(1, math.ceil(len(self.utterances) / (self.batch_speakers * self.n)))

    def epoch(self, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
        """[(speaker labels [S], utterance indices [S, N])] for one epoch."""
        batches = []
        order: list[int] = []
        k = self.batch_speakers
        for _ in range(self.count()):
            if len(order) >= k:
                labels, order = order[:k], order[k:]
            else:
                # Top up from a fresh permutation without repeating a speaker inside the batch (a repeat
                # would be a false negative for the contrastive loss).
                fresh = [int(s) for s in rng.permutation(len(self.speakers))]
                top_up = [s for s in fresh if s not in order][: k - len(order)]
                labels, order = order + top_up, [s for s in fresh if s not in top_up]
            labels = np.array(labels)
            picks = np.stack([self._pick(self.members[s], rng) for s in labels])
            batches.append((labels, picks))
        return batches

    def _pick(self, members: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """N distinct utterances when the speaker has them, else all of them and repeats."""
        if len(members) >= self.n:
            return rng.choice(members, self.n, replace=False)
        return np.concatenate([rng.permutation(members), rng.choice(members, self.n - len(members))])


def train_aam(
    modules: nn.Module,
    embed: Callable[[np.ndarray, np.random.Generator], tuple[torch.Tensor, int]],
    episodes: Episodes,
    dim: int,
    *,
    epochs: int,
    lr: float,
    weight_decay: float,
    grad_clip: float,
    lr_step: int | None,
    lr_gamma: float,
    margin: float,
    scale: float,
    context: PluginContext,
    stage: str,
    history: History,
    validate: Callable[[], float] | None = None,
) -> None:
    """Train `modules` (its parameters that require grad) so that `embed(indices [S, N], rng)` separates speakers.

    `embed` returns embeddings with `rows` rows per speaker (N for per-utterance training, 1 for aggregates).
    `validate()` (the validation EER of the current weights) runs after every epoch; the epoch with the
    lowest is kept. Without it the last epoch is kept.
    """
    best = BestEpoch(modules, validate)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(context.torch_seed(stage, "classifier"))
        classifier = AamSoftmax(dim, len(episodes.speakers), margin, scale).to(context.device)
    params = [p for p in modules.parameters() if p.requires_grad] + list(classifier.parameters())
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    # lr_step None: a constant rate (later_stage_schedule: constant)
    scheduler = None if lr_step is None else torch.optim.lr_scheduler.StepLR(optimizer, lr_step, gamma=lr_gamma)
    scaler = torch.amp.GradScaler("cuda", enabled=context.on_gpu and context.precision == "fp16")  # fp16 underflows
    context.log.info(
        "%s: %d speakers, %d batches of %d speakers x %d utterances per epoch, %d epochs",
        stage,
        len(episodes.speakers),
        episodes.count(),
        episodes.batch_speakers,
        episodes.n,
        epochs,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(context.torch_seed(stage, "training"))
        for epoch in range(1, epochs + 1):
            started = time.perf_counter()
            rng = context.rng(stage, "epoch", epoch)
            modules.train()
            classifier.train()
            losses = []
            batches = episodes.epoch(rng)
            for labels, picks in context.progress(
                batches, total=len(batches), description=f"{stage} epoch {epoch}/{epochs}"
            ):
                with context.autocast():  # bf16 / fp16 on a GPU; the loss in fp32
                    embeddings, rows = embed(picks, rng)
                labels_on = torch.from_numpy(np.repeat(labels, rows)).to(context.device)
                loss = classifier(embeddings.float(), labels_on)
                optimizer.zero_grad()
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                nn.utils.clip_grad_norm_(params, grad_clip)
                scaler.step(optimizer)
                scaler.update()
                losses.append(loss.item())
            lr_now = optimizer.param_groups[0]["lr"]
            if scheduler is not None:
                scheduler.step()
            record = EpochRecord(stage, epoch, float(np.mean(losses)), lr_now, time.perf_counter() - started)
            history.epochs.append(record)
            best.after_epoch(record)
            context.log.info(
                "%s epoch %d/%d: loss %.4f, lr %.2e, %.1f s%s",
                stage,
                epoch,
                epochs,
                record.loss,
                lr_now,
                record.seconds,
                "" if record.validation_eer is None else f", validation EER {100 * record.validation_eer:.2f}%",
            )
    best.restore(context, stage)
    modules.eval()
