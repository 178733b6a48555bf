"""Builds SpInv's networks for a frontend and a target encoder, and trains them on a corpus."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from vpeval.errors import DataError
from vpeval.types import Corpus
from vpeval_spinv.model import DinoHead, Layout, Recovery, Sizes
from vpeval_spinv.training import DistillSettings, SpInvNetworks, StageSettings, Views, run_stage
from vpeval_spinv.views import collate, crop_waveform, frames_for, layout_of, slice_output

if TYPE_CHECKING:
    from vpeval_spinv.attacker import SpInv

AUDIO_CACHE = 4096  # waveforms kept in memory between epochs (small corpora are read once)
FRAME_SLACK = 2  # frontends may emit a frame or two more than ceil(seconds * rate)


def build_recovery(config: dict) -> Recovery:
    layout = Layout(tuple(config["layout"]["codebook_sizes"]), int(config["layout"]["feature_dim"]))
    return Recovery(layout, Sizes(**config["sizes"])).eval()


def fit_spinv(attacker: SpInv, corpus: Corpus, validation: Corpus | None = None) -> tuple[Recovery, dict, list[dict]]:
    """Stage A then Stage B on `corpus`; returns G (eval mode), its config and the loss history.

    With a validation corpus (and select_stage_a: validation) Stage B starts from the Stage A epoch
    whose recovered embeddings come closest (CosSim, eq. 14) to the target encoder's on it.
    """
    p = attacker.params
    frontend = attacker.attacked_frontend()
    utterances = corpus.utterances
    audio_cache: dict[int, np.ndarray] = {}

    def audio(i: int) -> np.ndarray:
        if i in audio_cache:
            return audio_cache[i]
        wave = utterances[i].load(frontend.sample_rate)
        if len(audio_cache) < AUDIO_CACHE:
            audio_cache[i] = wave
        return wave

    first = attacker.frontend_output(audio(0))
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
        frames_for(longest, first.frame_rate) + FRAME_SLACK,
        p.dropout,
    )
    config = {
        "layout": layout.as_dict(),
        "sizes": sizes.__dict__.copy(),
        "frame_rate": first.frame_rate,
        "target_encoder": p.target_encoder.model_dump(),
        "speakers": len(corpus.speakers),
    }

    torch.manual_seed(attacker.context.torch_seed("spinv", "init"))
    nets = SpInvNetworks(
        Recovery(layout, sizes), DinoHead(p.output_dim, p.dino_hidden, p.dino_bottleneck, p.dino_prototypes)
    )
    speaker_index = {s: i for i, s in enumerate(corpus.speakers)}
    nets.classifier = nn.Parameter(nn.init.xavier_uniform_(torch.empty(len(speaker_index), p.hidden)))
    labels = np.array([speaker_index[u.speaker] for u in utterances])

    def encode(wave: np.ndarray, what: str):
        output = attacker.frontend_output(wave)
        if layout_of(output) != layout:
            raise DataError(
                f"The frontend's {what} output has layout {layout_of(output)}, unlike its first output {layout}."
            )
        return output

    whole_outputs: dict[int, object] = {}

    def whole(i: int):
        if i not in whole_outputs:
            whole_outputs[i] = encode(audio(i), "training")
        return whole_outputs[i]

    def make_views(indices: list[int], rng: np.random.Generator) -> Views:
        rate = frontend.sample_rate

        def view(seconds: float, what: str):
            if p.views_from == "frames":  # cut from the output of the whole utterance, encoded once
                outputs = [slice_output(whole(i), seconds, rng) for i in indices]
            else:  # the paper: cut the waveform, then encode the crop
                outputs = [encode(crop_waveform(audio(i), seconds, rate, rng), what) for i in indices]
            return collate(outputs, layout, sizes.max_frames)

        local = [view(p.local_seconds, "local view") for _ in range(2)]
        global_ = [view(p.global_seconds, "global view") for _ in range(2)]
        if targets is not None:
            z = np.stack([targets[i] for i in indices])
        else:
            enc_rate = attacker.encoder.sample_rate
            z = np.stack(
                [
                    attacker.embed_waveform(
                        crop_waveform(utterances[i].load(enc_rate), p.teacher_seconds, enc_rate, rng)
                    )
                    for i in indices
                ]
            )
        return Views(local, global_, torch.from_numpy(z).float(), torch.from_numpy(labels[indices]))

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
    for stage in stages:
        history += run_stage(
            nets,
            stage,
            settings,
            len(utterances),
            make_views,
            lambda epoch, s=stage.name: attacker.context.rng("spinv", "views", s, epoch),
            attacker.context.log.info,
            validate if stage.name == "A" else None,
        )
    return nets.student.eval(), config, history


def validation_cossim(attacker: SpInv, student: Recovery, corpus: Corpus, layout: Layout, max_frames: int, batch: int):
    """A function giving the mean cosine of G's recovery of a local-view-length slice of every validation
    utterance with its target embedding (slices seeded by the utterance id, as the attack's; their length
    is the one G trains on, not observed_seconds, so that training does not depend on the attack)."""
    sample_rate = attacker.attacked_frontend().sample_rate
    slices = []
    for u in corpus.utterances:
        output = attacker.frontend_output(u.load(sample_rate))
        if layout_of(output) != layout:
            raise DataError(
                f"The frontend's output for {u.path} has {layout_of(output)}, unlike its training output {layout}."
            )
        slices.append(slice_output(output, attacker.params.local_seconds, attacker.context.rng("spinv-slice", u.id)))
    targets = attacker.target_embeddings(corpus.utterances)
    target = torch.from_numpy(np.stack(targets)).float()

    def score() -> float:
        student.eval()
        with torch.no_grad():
            recovered = torch.cat(
                [student(collate(slices[k : k + batch], layout, max_frames))[0] for k in range(0, len(slices), batch)]
            )
        student.train()
        return float(torch.nn.functional.cosine_similarity(recovered, target, dim=-1).mean())

    return score
