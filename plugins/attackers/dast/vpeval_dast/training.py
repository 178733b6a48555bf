"""One curriculum stage: a new AAM-softmax head over the stage's speakers, random crops, AdamW or Muon,
a triangular cyclical learning rate (Smith 2017, section 3.2), gradient accumulation, fixed epochs."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from vpeval.api import PluginContext
from vpeval.types import Utterance
from vpeval_dast.embedding import SAMPLE_RATE, AudioCache, Embedder, random_crop, random_crop_with_frames
from vpeval_dast.params import DastParams


@dataclass
class StageRecord:
    stage: str
    speakers: int
    utterances: int
    epochs: int
    optimizer: str
    losses: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


class AamHead(torch.nn.Module):
    """SpeechBrain's cosine classifier with the additive angular margin softmax loss."""

    def __init__(self, embedding_dim: int, speakers: int, margin: float, scale: float):
        super().__init__()
        from speechbrain.lobes.models.ECAPA_TDNN import Classifier
        from speechbrain.nnet.losses import AdditiveAngularMargin, LogSoftmaxWrapper

        self.classifier = Classifier(input_size=embedding_dim, out_neurons=speakers)
        self.cost = LogSoftmaxWrapper(AdditiveAngularMargin(margin=margin, scale=scale))

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.cost(self.classifier(embeddings.unsqueeze(1)), labels.unsqueeze(1))


def muon_available() -> bool:
    return hasattr(torch.optim, "Muon")


class _Unflatten(torch.nn.Module):
    """Holds a convolution's weight [out, in, k] as a matrix [out, in * k] (the parametrization's original)."""

    def __init__(self, shape: torch.Size):
        super().__init__()
        self.shape = tuple(shape)

    def forward(self, matrix: torch.Tensor) -> torch.Tensor:
        return matrix.view(self.shape)

    def right_inverse(self, weight: torch.Tensor) -> torch.Tensor:
        return weight.reshape(weight.shape[0], -1)


@contextlib.contextmanager
def convolutions_as_matrices(network: torch.nn.Module) -> Iterator[None]:
    """While Muon trains: every convolution weight is a 2-d parameter [out, in * kernel], the way the
    reference Muon flattens convolution filters (torch.optim.Muon takes 2-d parameters only); the
    weights go back to their usual shape and state-dict names afterwards."""
    from torch.nn.utils import parametrize

    convolutions = [m for m in network.modules() if isinstance(m, torch.nn.Conv1d) and m.weight.requires_grad]
    for module in convolutions:
        parametrize.register_parametrization(module, "weight", _Unflatten(module.weight.shape), unsafe=True)
    try:
        yield
    finally:
        for module in convolutions:
            parametrize.remove_parametrizations(module, "weight", leave_parametrized=True)


def make_optimizers(kind: str, parameters: Sequence[torch.nn.Parameter], params: DastParams) -> tuple[list, str]:
    """The optimizers of a stage and what they are. Muon orthogonalises 2-d weight matrices (and the
    convolutions flattened by convolutions_as_matrices); norms, biases and the layer weights take AdamW,
    as Muon's authors advise."""
    trainable = [p for p in parameters if p.requires_grad]
    if kind == "muon" and muon_available():
        matrices = [p for p in trainable if p.ndim == 2]
        rest = [p for p in trainable if p.ndim != 2]
        optimizers = [torch.optim.Muon(matrices, lr=params.lr, weight_decay=params.weight_decay)] if matrices else []
        optimizers.append(torch.optim.AdamW(rest, lr=params.lr, weight_decay=params.weight_decay))
        share = sum(p.numel() for p in matrices) / max(1, sum(p.numel() for p in trainable))
        return optimizers, f"muon ({share:.0%} of the weights: matrices and flattened convolutions) + adamw"
    described = "adamw" if kind == "adamw" else "adamw (this torch has no torch.optim.Muon)"
    return [torch.optim.AdamW(trainable, lr=params.lr, weight_decay=params.weight_decay)], described


def train_stage(
    embedder: Embedder,
    utterances: Sequence[Utterance],
    stage: str,
    params: DastParams,
    context: PluginContext,
    name: str,
) -> StageRecord:
    """Train embedder.network in place on the stage's utterances (labels: their speakers)."""
    muon = params.stage(stage).optimizer == "muon" and muon_available()
    with (
        torch.random.fork_rng(devices=[]),
        convolutions_as_matrices(embedder.network) if muon else contextlib.nullcontext(),
    ):
        torch.manual_seed(context.torch_seed(name, stage, "training"))
        return _train(embedder, utterances, stage, params, context, name)


def _train(
    embedder: Embedder,
    utterances: Sequence[Utterance],
    stage: str,
    params: DastParams,
    context: PluginContext,
    name: str,
) -> StageRecord:
    settings = params.stage(stage)
    epochs = params.stage_epochs(stage)
    speakers = sorted({u.speaker for u in utterances})
    label_of = {s: i for i, s in enumerate(speakers)}
    labels = np.array([label_of[u.speaker] for u in utterances])
    cache = AudioCache(params.audio_cache_mb)
    ssl_cache = embedder.ssl_cache  # ssl_context utterance: the frozen model's states, once per utterance
    crop = int(params.crop_seconds * SAMPLE_RATE)
    # One crop per crop-length stretch of each utterance, so an epoch covers about all the audio once.
    segments = np.repeat(np.arange(len(utterances)), [max(1, cache.load(u).size // crop) for u in utterances])
    network = embedder.network
    torch.manual_seed(context.torch_seed(name, stage, "head"))
    head = AamHead(network.config.embedding_dim, len(speakers), params.margin, params.scale)  # new per stage
    network.set_dropout(settings.dropout)
    optimizers, described = make_optimizers(settings.optimizer, [*network.parameters(), *head.parameters()], params)
    batches_per_epoch = -(-len(segments) // settings.batch_size)
    if batches_per_epoch > 1 and len(segments) % settings.batch_size == 1:
        batches_per_epoch -= 1  # the one-crop remainder is dropped below (batch norm needs two)
    steps = epochs * math.ceil(batches_per_epoch / settings.grad_accumulation)
    half_cycle = max(1, round(steps / (2 * params.clr_cycles)))
    schedulers = [
        torch.optim.lr_scheduler.CyclicLR(
            o,
            base_lr=params.base_lr,
            max_lr=params.lr,
            step_size_up=half_cycle,
            mode="triangular",
            cycle_momentum=False,
        )
        for o in optimizers
    ]
    record = StageRecord(stage, len(speakers), len(utterances), epochs, described)
    context.log.info(
        "%s stage %s: %d utterances of %d speakers, %d epochs, %s, dropout %.1f, %d steps (CLR half cycle %d)",
        name,
        stage,
        len(utterances),
        len(speakers),
        epochs,
        described,
        settings.dropout,
        steps,
        half_cycle,
    )
    generator = torch.Generator().manual_seed(context.torch_seed(name, stage, "specaugment"))
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        rng = context.rng(name, stage, "epoch", epoch)
        order = segments[rng.permutation(len(segments))]
        batches = [order[i : i + settings.batch_size] for i in range(0, len(order), settings.batch_size)]
        if len(batches) > 1 and len(batches[-1]) < 2:  # batch norm needs two examples
            batches = batches[:-1]
        network.train()
        head.train()
        losses = []
        for index, batch in enumerate(
            context.progress(batches, total=len(batches), description=f"{name} stage {stage} epoch {epoch}/{epochs}")
        ):
            if ssl_cache is None:
                waves = torch.from_numpy(np.stack([random_crop(cache.load(utterances[k]), crop, rng) for k in batch]))
                hidden = None
            else:
                pairs = [
                    random_crop_with_frames(
                        audio := cache.load(utterances[k]),
                        ssl_cache.load(utterances[k], audio),
                        crop,
                        embedder.ssl.hop,
                        rng,
                    )
                    for k in batch
                ]
                waves = torch.from_numpy(np.stack([w for w, _ in pairs]))
                hidden = torch.from_numpy(np.stack([h for _, h in pairs], axis=1)).float()
            loss = head(network(*embedder.inputs(waves, generator, hidden)), torch.from_numpy(labels[batch]))
            (loss / settings.grad_accumulation).backward()
            losses.append(loss.item())
            if (index + 1) % settings.grad_accumulation == 0 or index + 1 == len(batches):
                for optimizer, scheduler in zip(optimizers, schedulers):
                    optimizer.step()
                    optimizer.zero_grad()
                    scheduler.step()
        record.losses.append(float(np.mean(losses)))
        record.seconds.append(time.perf_counter() - started)
        context.log.info(
            "%s stage %s epoch %d/%d: loss %.4f, %.1f s",
            name,
            stage,
            epoch,
            epochs,
            record.losses[-1],
            record.seconds[-1],
        )
    network.eval()
    return record
