"""One curriculum stage: a new AAM-softmax head over the stage's speakers, random crops read from disk at
each step (training_data.py), AdamW or Muon, a triangular cyclical learning rate (Smith 2017, section 3.2),
gradient accumulation, fixed epochs; on the run's device, under its autocast."""

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
from vpeval_dast.embedding import Embedder
from vpeval_dast.params import DastParams
from vpeval_torch.validation import ValidationTrials


@dataclass
class StageRecord:
    stage: str
    speakers: int
    utterances: int
    epochs: int
    optimizer: str
    losses: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    validation_eers: list[float] = field(default_factory=list)  # 0-1, after each epoch, when validation trials exist


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


def muon_groups(network: torch.nn.Module, head: torch.nn.Module) -> tuple[list, list]:
    """(Muon's parameters, AdamW's) as Muon's authors use it (Jordan et al. 2024): Muon only for the hidden
    weight matrices (2-d, with the convolutions flattened by convolutions_as_matrices); AdamW for the output
    layers, here the AAM head and the final embedding layer, and for every parameter that is not a matrix
    (biases, norms' gains, the SSL layer-weight logits)."""
    outputs = {id(p) for p in [*head.parameters(), *network.embedding.parameters()]}
    trainable = [p for p in [*network.parameters(), *head.parameters()] if p.requires_grad]
    hidden = [p for p in trainable if p.ndim == 2 and id(p) not in outputs]
    chosen = {id(p) for p in hidden}
    return hidden, [p for p in trainable if id(p) not in chosen]


def make_optimizers(kind: str, network: torch.nn.Module, head: torch.nn.Module, params: DastParams) -> tuple[list, str]:
    """The optimizers of a stage and what they are (muon_groups says who gets Muon)."""
    if kind == "muon" and muon_available():
        matrices, rest = muon_groups(network, head)
        optimizers = [torch.optim.Muon(matrices, lr=params.lr, weight_decay=params.weight_decay)] if matrices else []
        optimizers.append(torch.optim.AdamW(rest, lr=params.lr, weight_decay=params.weight_decay))
        share = sum(p.numel() for p in matrices) / max(1, sum(p.numel() for p in [*matrices, *rest]))
        return optimizers, f"muon ({share:.0%} of the weights: hidden matrices and flattened convolutions) + adamw"
    trainable = [p for p in [*network.parameters(), *head.parameters()] if p.requires_grad]
    described = "adamw" if kind == "adamw" else "adamw (this torch has no torch.optim.Muon)"
    return [torch.optim.AdamW(trainable, lr=params.lr, weight_decay=params.weight_decay)], described


def train_stage(
    embedder: Embedder,
    utterances: Sequence[Utterance],
    stage: str,
    params: DastParams,
    context: PluginContext,
    name: str,
    validation: ValidationTrials | None = None,
) -> StageRecord:
    """Train embedder.network in place on the stage's utterances (labels: their speakers); with
    `validation`, score its trials after every epoch (recorded, not used to select an epoch)."""
    muon = params.stage(stage).optimizer == "muon" and muon_available()
    with (
        torch.random.fork_rng(devices=[]),
        convolutions_as_matrices(embedder.network) if muon else contextlib.nullcontext(),
    ):
        torch.manual_seed(context.torch_seed(name, stage, "training"))
        return _train(embedder, utterances, stage, params, context, name, validation)


def _train(
    embedder: Embedder,
    utterances: Sequence[Utterance],
    stage: str,
    params: DastParams,
    context: PluginContext,
    name: str,
    validation: ValidationTrials | None,
) -> StageRecord:
    from vpeval_dast.training_data import StageCrops

    settings = params.stage(stage)
    epochs = params.stage_epochs(stage)
    data = StageCrops(utterances, embedder, params, context, f"{name} stage {stage}")
    network = embedder.network
    torch.manual_seed(context.torch_seed(name, stage, "head"))
    head = AamHead(network.config.embedding_dim, data.speakers, params.margin, params.scale).to(embedder.device)
    network.set_dropout(settings.dropout)
    optimizers, described = make_optimizers(settings.optimizer, network, head, params)
    batches_per_epoch = data.batches_per_epoch(settings.batch_size)
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
    record = StageRecord(stage, data.speakers, len(utterances), epochs, described)
    context.log.info(
        "%s stage %s: %d utterances of %d speakers, %d epochs, %s, dropout %.1f, %d steps (CLR half cycle %d)",
        name,
        stage,
        len(utterances),
        data.speakers,
        epochs,
        described,
        settings.dropout,
        steps,
        half_cycle,
    )
    generator = torch.Generator().manual_seed(context.torch_seed(name, stage, "specaugment"))
    # fp16 gradients underflow without loss scaling; a no-op (plain backward and step) otherwise
    scaler = torch.amp.GradScaler(
        embedder.device.type, enabled=embedder.device.type == "cuda" and context.precision == "fp16"
    )
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        network.train()
        head.train()
        losses = []
        batches = data.batches(epoch, settings.batch_size, context.torch_seed(name, stage, "epoch", epoch))
        for index, (waves, hidden, labels) in enumerate(
            context.progress(
                batches, total=batches_per_epoch, description=f"{name} stage {stage} epoch {epoch}/{epochs}"
            )
        ):
            with embedder.autocast():
                embeddings = network(*embedder.inputs(waves, generator, hidden))
            # the angular margin in fp32: cosines near 1 lose their margin in bf16 / fp16
            loss = head(embeddings.float(), labels.to(embedder.device))
            scaler.scale(loss / settings.grad_accumulation).backward()
            losses.append(loss.item())
            if (index + 1) % settings.grad_accumulation == 0 or index + 1 == batches_per_epoch:
                for optimizer in optimizers:
                    scaler.step(optimizer)
                scaler.update()
                for optimizer, scheduler in zip(optimizers, schedulers):
                    optimizer.zero_grad()
                    scheduler.step()
        record.losses.append(float(np.mean(losses)))
        record.seconds.append(time.perf_counter() - started)
        if validation is not None:
            network.eval()  # the embedding's own mode; training resumes in train mode next epoch
            with torch.no_grad():
                record.validation_eers.append(validation.eer(embedder.embed_utterances(validation.utterances)))
        context.log.info(
            "%s stage %s epoch %d/%d: loss %.4f, validation EER %s, %.1f s",
            name,
            stage,
            epoch,
            epochs,
            record.losses[-1],
            f"{100 * record.validation_eers[-1]:.2f}%" if record.validation_eers else "-",
            record.seconds[-1],
        )
    network.eval()
    return record
