"""The training loop shared by the ECAPA and x-vector attackers.

Speaker classification on random crops, AdamW, the recipe's learning-rate schedule, validation EER
after each epoch, early stopping, and the best epoch's weights kept (or the last: keep_epoch).

Training audio streams from disk: each step's crops are read (only their frames) by DataLoader workers
(vpeval_torch.crops), so memory does not grow with the corpus. The network trains on the run's device,
its forward passes under the run's autocast (fp16 with a gradient scaler).
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
from vpeval.errors import DataError
from vpeval.types import Utterance
from vpeval_asv.audio import AudioCache, crops_per_utterance
from vpeval_asv.embedding import Embedder
from vpeval_asv.models import SpeakerClassifier
from vpeval_asv.params import AsvParams
from vpeval_torch.crops import log_short_utterances
from vpeval_torch.validation import ValidationTrials


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
    device = embedder.device
    speakers = sorted({u.speaker for u in utterances})
    segments = crop_segments(utterances, {s: i for i, s in enumerate(speakers)}, params.crop_seconds, params.drop_short)
    short = len(utterances) - len({s.path for s in segments}) if params.drop_short else 0
    log_short_utterances(context.log, name, short, len(utterances), params.crop_seconds)
    if not segments:
        raise DataError(
            f"{name}: no training utterance is as long as one crop ({params.crop_seconds} s) and drop_short is set; "
            "give longer training speech, a shorter crop_seconds or drop_short: false."
        )
    crop_seed = context.torch_seed(name, "crops")
    workers = _loader_workers(params, context)
    validation_audio = AudioCache(config.sample_rate, params.audio_cache_mb)

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(context.torch_seed(name, "classifier"))
        classifier = SpeakerClassifier(params.loss, config.embedding_dim, len(speakers), params.margin, params.scale)
    classifier = classifier.to(device)
    model = embedder.model
    trainable = list(model.parameters()) + list(classifier.parameters())
    optimizer = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam}[params.optimizer](
        trainable, lr=params.lr, weight_decay=params.weight_decay
    )
    # fp16 gradients underflow without loss scaling; bf16 and fp32 need none (the scaler is then a no-op)
    scaler = torch.amp.GradScaler(device.split(":", 1)[0], enabled=context.on_gpu and context.precision == "fp16")
    context.log.info(
        "%s: training on %d utterances of %d speakers (%d crops of %.1f s per epoch, %d loader workers, %s), "
        "%d validation trials",
        name,
        len(utterances),
        len(speakers),
        len(segments),
        params.crop_seconds,
        workers,
        device,
        0 if validation is None else len(validation.target),
    )

    _warn_if_cyclic_lr_stays_low(params, len(segments), context, name)

    result = TrainingResult()
    stopping = EarlyStopping(params.patience, params.min_epochs)
    best_state = copy.deepcopy(model.state_dict())
    iteration = 0
    for epoch in range(1, params.epochs + 1):
        started = time.perf_counter()
        loader = epoch_loader(
            segments,
            params,
            config.sample_rate,
            (crop_seed, epoch),
            workers,
            device,
            context.torch_seed(name, "epoch", epoch),
        )
        batches = len(loader)
        if params.lr_schedule == "linear":
            _set_lr(optimizer, linear_lr(epoch, params.epochs, params.lr, params.final_lr))
        model.train()
        classifier.train()
        losses = []
        for index, (waves, labels) in enumerate(
            context.progress(loader, total=batches, description=f"{name} epoch {epoch}/{params.epochs}")
        ):
            if batches > 1 and index == batches - 1 and len(labels) < 2:  # batch norm needs two examples
                break
            iteration += 1
            if params.lr_schedule == "cyclic":
                _set_lr(optimizer, cyclic_lr(iteration, params.base_lr, params.lr, params.cyclic_step_size))
            waves = waves.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            feats = embedder.features(waves)
            with context.autocast():
                loss = classifier(model(feats), labels)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            if params.max_grad_norm is not None:  # as speechbrain's Brain.optimizers_step: unscale, clip, step
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(trainable, params.max_grad_norm)
            scaler.step(optimizer)
            scaler.update()
            losses.append(loss.item())
        lr = optimizer.param_groups[0]["lr"]
        eer = _validation_eer(embedder, validation, validation_audio)
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
        if keep or params.keep_epoch == "last":
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


def crop_segments(
    utterances: Sequence[Utterance], label_of: dict[str, int], crop_seconds: float, drop_short: bool = False
) -> list:
    """One CropItem per crop-length stretch of each utterance (the recipe's segment list); an utterance
    shorter than a crop gives one (repeated to fill it), or none with `drop_short` (as VoicePrivacy's
    prepare_csv, whose _get_chunks lists int(duration / crop) chunks).

    Files are described by path, label and length (declared, else the header): no sample is read here.
    """
    from vpeval_torch.crops import crop_items

    files = crop_items(utterances, [label_of[u.speaker] for u in utterances])
    counts = [crops_per_utterance(f.frames / f.sample_rate, crop_seconds) for f in files]
    if drop_short:
        counts = [int(f.frames / f.sample_rate / crop_seconds) for f in files]
    return [f for f, count in zip(files, counts) for _ in range(count)]


def epoch_loader(
    segments: list,
    params: AsvParams,
    sample_rate: int,
    seed_epoch: tuple[int, int],
    workers: int,
    device: str,
    shuffle_seed: int,
) -> torch.utils.data.DataLoader:
    """An epoch's batches (waves [B, crop], labels [B]): a random crop of each segment, read from disk."""
    from vpeval_torch.crops import RandomCrops, crop_loader

    seed, epoch = seed_epoch
    crops = RandomCrops(segments, params.crop_seconds, sample_rate, seed=seed, epoch=epoch)
    return crop_loader(crops, params.batch_size, workers, device, shuffle_seed, drop_last=False)


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


def _validation_eer(embedder: Embedder, validation: ValidationTrials | None, audio: AudioCache) -> float | None:
    """EER of the validation trials, their utterances embedded in packed length buckets."""
    if validation is None:
        return None
    from vpeval_asv.embedding import utterance_samples

    utterances = validation.utterances
    embeddings = np.zeros((len(utterances), embedder.config.embedding_dim), dtype=np.float32)
    for bucket in embedder.buckets([utterance_samples(u, embedder.config.sample_rate) for u in utterances]):
        embeddings[bucket] = embedder.embed_batch([audio.load(utterances[i]) for i in bucket])
    return validation.eer(embeddings)


def _loader_workers(params: AsvParams, context: PluginContext) -> int:
    """DataLoader worker processes: the parameter, else 4 on a GPU (reading overlaps its steps) and 0 on
    the CPU, whose cores the training threads already use (the dast attacker measured workers slower there)."""
    if params.loader_workers is not None:
        return params.loader_workers
    return 4 if context.on_gpu else 0
