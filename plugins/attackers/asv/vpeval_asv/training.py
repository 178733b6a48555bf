"""The training loop shared by the ECAPA and x-vector attackers.

Speaker classification on random crops, AdamW, the recipe's learning-rate schedule, validation EER
after each epoch, early stopping, and the best epoch's weights kept.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from vpeval.api import PluginContext
from vpeval.types import Utterance
from vpeval_asv.audio import AudioCache, crops_per_utterance, random_crop
from vpeval_asv.embedding import Embedder
from vpeval_asv.models import SpeakerClassifier
from vpeval_asv.params import AsvParams
from vpeval_asv.validation import ValidationTrials


@dataclass
class EpochRecord:
    epoch: int
    loss: float
    validation_eer: float | None
    lr: float
    seconds: float


@dataclass
class TrainingResult:
    history: list[EpochRecord] = field(default_factory=list)
    best_epoch: int = 0
    stopped_early: bool = False


@dataclass
class EarlyStopping:
    """Tracks the best validation EER; says when `patience` epochs passed without a lower one."""

    patience: int | None
    min_epochs: int
    best_eer: float = math.inf
    best_epoch: int = 0

    def update(self, epoch: int, eer: float | None) -> tuple[bool, bool]:
        """(keep this epoch as the best, stop now). Without validation every epoch is kept."""
        if eer is None or eer < self.best_eer:
            self.best_eer = math.inf if eer is None else eer
            self.best_epoch = epoch
            return True, False
        stop = self.patience is not None and epoch >= self.min_epochs and epoch - self.best_epoch >= self.patience
        return False, stop


def cyclic_lr(iteration: int, base_lr: float, max_lr: float, step_size: int) -> float:
    """speechbrain's triangular CyclicLRScheduler at batch `iteration` (1-based)."""
    cycle = math.floor(1 + iteration / (2 * step_size))
    x = abs(iteration / step_size - 2 * cycle + 1)
    return base_lr + (max_lr - base_lr) * max(0.0, 1 - x)


def linear_lr(epoch: int, epochs: int, lr: float, final_lr: float) -> float:
    """speechbrain's LinearScheduler: epoch `epoch` (1-based) of `epochs` runs at this rate."""
    return float(np.linspace(lr, final_lr, epochs)[epoch - 1]) if epochs > 1 else lr


def train_network(
    embedder: Embedder,
    utterances: Sequence[Utterance],
    validation: ValidationTrials | None,
    params: AsvParams,
    context: PluginContext,
    name: str,
) -> TrainingResult:
    """Train `embedder.model` in place on `utterances` (labels: their speakers); load the best epoch."""
    # Layers that draw from torch's global generator (x-vector pooling noise) draw from the run's seed.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(context.torch_seed(name, "training"))
        return _train(embedder, utterances, validation, params, context, name)


def _train(
    embedder: Embedder,
    utterances: Sequence[Utterance],
    validation: ValidationTrials | None,
    params: AsvParams,
    context: PluginContext,
    name: str,
) -> TrainingResult:
    config = embedder.config
    speakers = sorted({u.speaker for u in utterances})
    label_of = {s: i for i, s in enumerate(speakers)}
    labels = np.array([label_of[u.speaker] for u in utterances])
    cache = AudioCache(config.sample_rate, params.audio_cache_mb)
    crop_length = int(params.crop_seconds * config.sample_rate)

    # One entry per crop-length stretch of each utterance (the recipe's segment list).
    durations = [u.duration if u.duration else cache.load(u).size / config.sample_rate for u in utterances]
    segments = np.repeat(np.arange(len(utterances)), [crops_per_utterance(d, params.crop_seconds) for d in durations])

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(context.torch_seed(name, "classifier"))
        classifier = SpeakerClassifier(params.loss, config.embedding_dim, len(speakers), params.margin, params.scale)
    model = embedder.model
    optimizer = torch.optim.AdamW(
        list(model.parameters()) + list(classifier.parameters()), lr=params.lr, weight_decay=params.weight_decay
    )
    context.log.info(
        "%s: training on %d utterances of %d speakers (%d crops of %.1f s per epoch), %d validation trials",
        name,
        len(utterances),
        len(speakers),
        len(segments),
        params.crop_seconds,
        0 if validation is None else len(validation.target),
    )

    _warn_if_cyclic_lr_stays_low(params, len(segments), context, name)

    result = TrainingResult()
    stopping = EarlyStopping(params.patience, params.min_epochs)
    best_state = copy.deepcopy(model.state_dict())
    iteration = 0
    for epoch in range(1, params.epochs + 1):
        started = time.perf_counter()
        rng = context.rng(name, "epoch", epoch)
        order = segments[rng.permutation(len(segments))]
        batches = [order[i : i + params.batch_size] for i in range(0, len(order), params.batch_size)]
        if len(batches) > 1 and len(batches[-1]) < 2:  # batch norm needs two examples
            batches = batches[:-1]
        if params.lr_schedule == "linear":
            _set_lr(optimizer, linear_lr(epoch, params.epochs, params.lr, params.final_lr))
        model.train()
        classifier.train()
        losses = []
        for batch in context.progress(batches, total=len(batches), description=f"{name} epoch {epoch}/{params.epochs}"):
            iteration += 1
            if params.lr_schedule == "cyclic":
                _set_lr(optimizer, cyclic_lr(iteration, params.base_lr, params.lr, params.cyclic_step_size))
            waves = np.stack([random_crop(cache.load(utterances[k]), crop_length, rng) for k in batch])
            feats = embedder.features(torch.from_numpy(waves))
            loss = classifier(model(feats), torch.from_numpy(labels[batch]))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        lr = optimizer.param_groups[0]["lr"]
        eer = _validation_eer(embedder, validation, cache)
        record = EpochRecord(
            epoch, float(np.mean(losses)) if losses else math.nan, eer, lr, time.perf_counter() - started
        )
        result.history.append(record)
        context.log.info(
            "%s epoch %d/%d: loss %.4f, validation EER %s, lr %.2e, %.1f s",
            name,
            epoch,
            params.epochs,
            record.loss,
            "n/a" if eer is None else f"{100 * eer:.2f}%",
            lr,
            record.seconds,
        )
        keep, stop = stopping.update(epoch, eer)
        if keep:
            best_state = copy.deepcopy(model.state_dict())
            result.best_epoch = epoch
        if stop:
            result.stopped_early = True
            context.log.info("%s: validation EER has not improved for %d epochs; stopping", name, params.patience)
            break
    model.load_state_dict(best_state)
    model.eval()
    context.log.info("%s: kept epoch %d", name, result.best_epoch)
    return result


def _warn_if_cyclic_lr_stays_low(params: AsvParams, crops: int, context: PluginContext, name: str) -> None:
    """The recipe's 65000-batch half cycle suits LibriSpeech-360; on a small corpus the rate never rises."""
    if params.lr_schedule != "cyclic":
        return
    total = params.epochs * max(1, -(-crops // params.batch_size))
    peak = cyclic_lr(min(total, params.cyclic_step_size), params.base_lr, params.lr, params.cyclic_step_size)
    if peak < 0.1 * params.lr:
        context.log.warning(
            "%s: with cyclic_step_size %d and %d batches in all, the learning rate never exceeds %.1e (lr is %.1e); "
            "for a corpus this small set lr_schedule: constant or a smaller cyclic_step_size",
            name,
            params.cyclic_step_size,
            total,
            peak,
            params.lr,
        )


def _set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _validation_eer(embedder: Embedder, validation: ValidationTrials | None, cache: AudioCache) -> float | None:
    if validation is None:
        return None
    embeddings = np.stack([embedder.embed_audio(cache.load(u)) for u in validation.utterances])
    return validation.eer(embeddings)
