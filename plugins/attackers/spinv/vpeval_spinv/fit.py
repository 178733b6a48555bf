"""Builds SpInv's networks for a frontend and a target encoder, and trains them on a corpus."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

from vpeval.errors import DataError
from vpeval.types import Corpus
from vpeval_spinv.model import DinoHead, Layout, Recovery, Sizes
from vpeval_spinv.parts import SpInvParts
from vpeval_spinv.teacher import ema_spans
from vpeval_spinv.training import DistillSettings, SpInvNetworks, StageSettings, Views, run_stage
from vpeval_spinv.views import FrameStore, collate, crop_waveform, layout_of, slice_output

AUDIO_CACHE_BYTES = 1 << 30  # training waveforms kept in memory between epochs (small corpora are read once)
FRAME_SLACK = 2  # frontends may emit a frame or two more than ceil(seconds * rate)


def build_recovery(config: dict) -> Recovery:
    layout = Layout(tuple(config["layout"]["codebook_sizes"]), int(config["layout"]["feature_dim"]))
    return Recovery(layout, Sizes(**config["sizes"])).eval()


def fit_spinv(
    attacker: SpInvParts, corpus: Corpus, validation: Corpus | None = None
) -> tuple[Recovery, dict, list[dict]]:
    """Stage A then Stage B on `corpus`; returns G (eval mode, on the CPU), its config and the loss history.

    With a validation corpus (and select_stage_a: validation) Stage B starts from the Stage A epoch
    whose recovered embeddings come closest (CosSim, eq. 14) to the target encoder's on it. The networks
    train on the experiment's device under its precision; the frontend encodes each batch's crops in one
    encode_batch call and the target encoder embeds teacher crops in one embed_batch call.
    """
    p = attacker.params
    context = attacker.context
    device = context.device
    frontend = attacker.attacked_frontend()
    utterances = corpus.utterances
    audio = WaveformCache(utterances, frontend.sample_rate)

    first = attacker.frontend_outputs([audio(0)])[0]
    layout = layout_of(first)
    longest = max(p.local_seconds, p.global_seconds)  # observed_seconds may not exceed it (SpInvParams)
    targets = attacker.target_embeddings(utterances) if p.teacher_seconds is None else None
    target_dim = (
        len(targets[0]) if targets else len(attacker.embed_waveform(utterances[0].load(attacker.encoder.sample_rate)))
    )
    sizes = Sizes(
        p.hidden,
        p.layers,
        p.heads,
        p.output_dim,
        target_dim,
        attacker.frames_for(longest, first.frame_rate) + FRAME_SLACK,
        p.dropout,
        p.projection_layers,
    )
    config = {
        "layout": layout.as_dict(),
        "sizes": sizes.__dict__.copy(),
        "frame_rate": first.frame_rate,
        "target_encoder": p.target_encoder.model_dump(),
        "speakers": len(corpus.speakers),
    }

    torch.manual_seed(context.torch_seed("spinv", "init"))
    nets = SpInvNetworks(
        Recovery(layout, sizes), DinoHead(p.output_dim, p.dino_hidden, p.dino_bottleneck, p.dino_prototypes)
    )
    speaker_index = {s: i for i, s in enumerate(corpus.speakers)}
    nets.classifier = nn.Parameter(nn.init.xavier_uniform_(torch.empty(len(speaker_index), p.hidden)))
    nets.to(device)
    labels = torch.from_numpy(np.array([speaker_index[u.speaker] for u in utterances]))

    def encode(waves: list[np.ndarray], what: str) -> list:
        outputs = attacker.frontend_outputs(waves)
        for output in outputs:
            if layout_of(output) != layout:
                raise DataError(
                    f"The frontend's {what} output has layout {layout_of(output)}, unlike its first output {layout}."
                )
        return outputs

    store = None
    if p.views_from == "frames":  # every utterance encoded once, its output on disk, memory-mapped
        store = FrameStore(
            Path(tempfile.mkdtemp(prefix="frames-", dir=context.folder("spinv"))), layout, first.frame_rate
        )
        step = max(1, p.batch_size)
        for start in context.progress(range(0, len(utterances), step), description="spinv: encode training speech"):
            for output in encode([audio(i) for i in range(start, min(len(utterances), start + step))], "training"):
                store.append(output)
        store.close()

    def make_views(indices: list[int], rng: np.random.Generator) -> Views:
        rate = frontend.sample_rate
        lengths = [p.local_seconds] * 2 + [p.global_seconds] * 2  # V_s local views, then V_g global views
        if store is not None:  # cut from the output of the whole utterance, encoded once
            count = attacker.frames_for  # the frames the frontend emits for that many seconds, as the attack's
            views = [[slice_output(store[i], seconds, rng, count) for i in indices] for seconds in lengths]
        else:  # the paper: cut the waveform, then encode the crop; all 4 x B crops in one batched call
            crops = [crop_waveform(audio(i), seconds, rate, rng) for seconds in lengths for i in indices]
            outputs = encode(crops, "training view")
            views = [outputs[k * len(indices) : (k + 1) * len(indices)] for k in range(len(lengths))]
        batches = [collate(view, layout, sizes.max_frames, device) for view in views]
        if targets is not None:
            z = np.stack([targets[i] for i in indices])
        else:
            enc_rate = attacker.encoder.sample_rate
            z = attacker.embed_waveforms(
                [crop_waveform(utterances[i].load(enc_rate), p.teacher_seconds, enc_rate, rng) for i in indices]
            )
        return Views(batches[:2], batches[2:], torch.from_numpy(z).float().to(device), labels[indices].to(device))

    settings = DistillSettings(
        p.student_temperature,
        p.teacher_temperature,
        p.center_momentum,
        p.ema_start,
        p.ema_end,
        p.var_gamma,
        p.var_epsilon,
        p.margin,
        p.margin_ramp_start,
        p.margin_ramp_end,
        p.arc_scale,
        p.batch_size,
    )
    stages = [
        StageSettings("A", p.stage_a_epochs, p.stage_a_lr, p.stage_a_weights.model_dump()),
        StageSettings("B", p.stage_b_epochs, p.stage_b_lr, p.stage_b_weights.model_dump()),
    ]
    validate = None
    if validation is not None and len(validation) and p.select_stage_a == "validation":
        validate = validation_cossim(attacker, nets.student, validation, layout, sizes.max_frames, p.batch_size)
    history = []
    steps = [stage.epochs * max(1, len(utterances) // min(p.batch_size, len(utterances))) for stage in stages]
    spans = ema_spans(steps, p.ema_schedule == "whole-training")
    try:
        for k, stage in enumerate(stages):
            history += run_stage(
                nets,
                stage,
                settings,
                len(utterances),
                make_views,
                lambda epoch, s=stage.name: context.rng("spinv", "views", s, epoch),
                context.log.info,
                validate if stage.name == "A" else None,
                autocast=context.autocast,
                scaler=_scaler(context),
                ema_span=spans[k],
            )
    finally:
        if store is not None:
            shutil.rmtree(store.folder, ignore_errors=True)
    return nets.student.eval().cpu(), config, history


class WaveformCache:
    """Training waveforms at the frontend's rate, kept in memory up to AUDIO_CACHE_BYTES (small corpora are
    read once), read from disk again beyond it."""

    def __init__(self, utterances, sample_rate: int):
        self.utterances, self.sample_rate = utterances, sample_rate
        self.kept: dict[int, np.ndarray] = {}
        self.bytes = 0

    def __call__(self, i: int) -> np.ndarray:
        if i in self.kept:
            return self.kept[i]
        wave = self.utterances[i].load(self.sample_rate)
        if self.bytes + wave.nbytes <= AUDIO_CACHE_BYTES:
            self.kept[i] = wave
            self.bytes += wave.nbytes
        return wave


def _scaler(context):
    """fp16 on a GPU needs loss scaling (bf16 and fp32 do not)."""
    if context.on_gpu and context.precision == "fp16":
        return torch.amp.GradScaler("cuda")
    return None


def validation_cossim(
    attacker: SpInvParts, student: Recovery, corpus: Corpus, layout: Layout, max_frames: int, batch: int
):
    """A function giving the mean cosine of G's recovery of a local-view-length slice of every validation
    utterance with its target embedding (slices seeded by the utterance id, as the attack's; their length
    is the one G trains on, not observed_seconds, so that training does not depend on the attack)."""
    sample_rate = attacker.attacked_frontend().sample_rate
    device = attacker.context.device
    slices = []
    utterances = corpus.utterances
    for start in range(0, len(utterances), batch):
        chunk = utterances[start : start + batch]
        for u, output in zip(chunk, attacker.frontend_outputs([u.load(sample_rate) for u in chunk])):
            if layout_of(output) != layout:
                raise DataError(
                    f"The frontend's output for {u.path} has {layout_of(output)}, unlike its training output {layout}."
                )
            rng = attacker.context.rng("spinv-slice", u.id)
            slices.append(slice_output(output, attacker.params.local_seconds, rng, attacker.frames_for))
    targets = attacker.target_embeddings(utterances)
    target = torch.from_numpy(np.stack(targets)).float().to(device)

    def score() -> float:
        student.eval()
        with torch.no_grad(), attacker.context.autocast():
            recovered = torch.cat(
                [
                    student(collate(slices[k : k + batch], layout, max_frames, device))[0].float()
                    for k in range(0, len(slices), batch)
                ]
            )
        student.train()
        return float(torch.nn.functional.cosine_similarity(recovered, target, dim=-1).mean())

    return score
