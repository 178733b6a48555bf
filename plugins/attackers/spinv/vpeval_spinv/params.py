"""spinv's parameters: the networks, views and optimisation of seed 002's Speaker Inversion Attack."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from vpeval.api import Params
from vpeval.speakers import EncoderSpec

STAGE_A_WEIGHTS = {"align": 1.0, "rel": 0.5, "dino": 1.0, "var": 25.0, "cov": 1.0}  # lambda_1..5, section IV
STAGE_B_WEIGHTS = {"spk": 0.2, "align": 0.8, "rel": 0.4, "dino": 0.4, "var": 10.0, "cov": 0.5}  # mu_1..6


class StageAWeights(Params):
    align: float = Field(STAGE_A_WEIGHTS["align"], ge=0, le=1000, description="lambda_1, eq. 7")
    rel: float = Field(STAGE_A_WEIGHTS["rel"], ge=0, le=1000, description="lambda_2, eq. 8")
    dino: float = Field(STAGE_A_WEIGHTS["dino"], ge=0, le=1000, description="lambda_3, eq. 9")
    var: float = Field(STAGE_A_WEIGHTS["var"], ge=0, le=1000, description="lambda_4, eq. 10")
    cov: float = Field(STAGE_A_WEIGHTS["cov"], ge=0, le=1000, description="lambda_5, eq. 11")


class StageBWeights(Params):
    spk: float = Field(STAGE_B_WEIGHTS["spk"], ge=0, le=1000, description="mu_1, eq. 13")
    align: float = Field(STAGE_B_WEIGHTS["align"], ge=0, le=1000, description="mu_2, eq. 7")
    rel: float = Field(STAGE_B_WEIGHTS["rel"], ge=0, le=1000, description="mu_3, eq. 8")
    dino: float = Field(STAGE_B_WEIGHTS["dino"], ge=0, le=1000, description="mu_4, eq. 9")
    var: float = Field(STAGE_B_WEIGHTS["var"], ge=0, le=1000, description="mu_5, eq. 10")
    cov: float = Field(STAGE_B_WEIGHTS["cov"], ge=0, le=1000, description="mu_6, eq. 11")


class SpInvParams(Params):
    target_encoder: EncoderSpec = Field(
        default_factory=lambda: EncoderSpec(use="ge2e"),
        description="The frozen speaker encoder F whose space is recovered {use, params} "
        "(the paper: ECAPA-TDNN; here GE2E, packaged).",
    )
    observed_seconds: float = Field(
        3.0,
        gt=0,
        le=60,
        description="Seconds of frontend output the attack observes per utterance (Table IV sweeps 1-10).",
    )
    compare: Literal["target", "recovered"] = Field(
        "target",
        description="target: recovered test side against the target encoder's embedding of the enrollment audio; "
        "recovered: recovered embeddings on both sides (tokens only, the token-probe setting).",
    )
    trial_list: str | None = Field(
        None,
        description="Verification trials of the inversion metric: a VoxCeleb1-O ('1 enroll test') or Kaldi ('enroll "
        "test target') list over the evaluation utterances; null: every pair of different utterances.",
    )
    max_pairs: int = Field(
        1_000_000,
        ge=2,
        le=1_000_000_000,
        description="Without a trial_list, at most this many pairs: beyond it a seeded sample (noted in the result).",
    )
    # AuB and heads (section IV: d_h 384, d_a 512; depth and heads are not given)
    hidden: int = Field(384, ge=4, le=4096, description="AuB hidden size d_h (paper: 384).")
    layers: int = Field(6, ge=1, le=48, description="Transformer layers (not given in the paper).")
    heads: int = Field(6, ge=1, le=64, description="Attention heads (not given; must divide hidden).")
    output_dim: int = Field(512, ge=2, le=8192, description="AuB output d_a (paper: 512).")
    dropout: float = Field(0.1, ge=0, lt=1, description="Dropout in AuB (BERT's 0.1; not given).")
    projection_layers: int = Field(
        2,
        ge=1,
        le=8,
        description="Linear layers of the projection head o -> z_hat (section IV gives its input 512 and output d_z, "
        "not its depth; its 'one-layer MLP' is AuB's feature fusion layer).",
    )
    dino_prototypes: int = Field(1024, ge=2, le=262144, description="K prototypes of the DINO head (not given).")
    dino_hidden: int = Field(2048, ge=2, le=16384, description="DINO head MLP width (DINO's 2048).")
    dino_bottleneck: int = Field(256, ge=2, le=4096, description="DINO head bottleneck (DINO's 256).")
    student_temperature: float = Field(
        0.1, gt=0, le=100, description="tau_s of the student distribution (DINO's 0.1; not given)."
    )
    teacher_temperature: float = Field(
        0.04, gt=0, le=100, description="tau_t of the sharpened teacher (DINO's 0.04; not given)."
    )
    center_momentum: float = Field(0.9, ge=0, lt=1, description="DINO centre momentum (paper: 0.9).")
    ema_start: float = Field(0.996, ge=0, le=1, description="EMA teacher momentum at the first step (paper: 0.996).")
    ema_end: float = Field(
        0.9995, ge=0, le=1, description="EMA momentum at the last step, cosine schedule (paper: 0.9995)."
    )
    ema_schedule: Literal["per-stage", "whole-training"] = Field(
        "per-stage",
        description="Where the EMA cosine schedule runs (section IV gives only 'a cosine schedule from 0.996 to "
        "0.9995'): per-stage restarts it at Stage B (DINO schedules over one training; Stage B is a new "
        "training from the Stage A checkpoint); whole-training runs it once over Stage A then Stage B.",
    )
    var_gamma: float = Field(1.0, gt=0, le=1000, description="gamma of eq. 10 (VICReg's 1).")
    var_epsilon: float = Field(1e-4, gt=0, le=1, description="epsilon of eq. 10 (VICReg's 1e-4).")
    # views (lengths not given in the paper)
    local_seconds: float = Field(3.0, gt=0, le=60, description="Length of the two local (student) views.")
    global_seconds: float = Field(6.0, gt=0, le=60, description="Length of the two global (EMA teacher) views.")
    teacher_seconds: float | None = Field(
        None, gt=0, le=600, description="Length of the teacher view for F; null: the whole utterance (embedded once)."
    )
    views_from: Literal["waveform", "frames"] = Field(
        "waveform",
        description="waveform: cut each view from the audio and encode it (the paper); frames: encode each training "
        "utterance once and cut the views from its output (a shortcut for slow frontends on a CPU).",
    )
    select_stage_a: Literal["validation", "last"] = Field(
        "validation",
        description="Stage A checkpoint Stage B starts from: the epoch with the best validation CosSim (when the "
        "experiment has validation speakers), or the last.",
    )
    # optimisation (section IV)
    batch_size: int = Field(96, ge=2, le=4096, description="Utterances per batch (paper: 96).")
    stage_a_epochs: int = Field(60, ge=0, le=10000, description="Stage A epochs (paper: 60).")
    stage_a_lr: float = Field(4e-4, gt=0, le=1, description="Stage A Adam learning rate (paper: 4e-4).")
    stage_a_weights: StageAWeights = Field(default_factory=StageAWeights, description="lambda_1..5 of eq. 6.")
    stage_b_epochs: int = Field(40, ge=0, le=10000, description="Stage B epochs (paper: 40; 0 skips Stage B).")
    stage_b_lr: float = Field(1e-4, gt=0, le=1, description="Stage B Adam learning rate (paper: 1e-4).")
    stage_b_weights: StageBWeights = Field(default_factory=StageBWeights, description="mu_1..6 of eq. 12.")
    margin: float = Field(0.2, ge=0, lt=1.5, description="Final ArcMargin margin m (paper: 0.2).")
    margin_ramp_start: int = Field(
        10, ge=0, le=10_000, description="Stage B epoch where the margin starts rising from 0 (paper: 10)."
    )
    margin_ramp_end: int = Field(
        20, ge=0, le=10_000, description="Stage B epoch where the margin reaches its final value (paper: 20)."
    )
    arc_scale: float = Field(
        30.0, gt=0, le=100, description="ArcMargin logit scale s (not given; 30 as in ArcFace speaker models)."
    )

    @model_validator(mode="after")
    def _consistent(self):
        if self.hidden % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide hidden ({self.hidden})")
        if self.margin_ramp_end < self.margin_ramp_start:
            raise ValueError("margin_ramp_end must not come before margin_ramp_start")
        if self.ema_end < self.ema_start:
            raise ValueError("ema_end must be at least ema_start (the teacher slows down over training)")
        if self.observed_seconds > max(self.local_seconds, self.global_seconds):
            raise ValueError(
                f"observed_seconds ({self.observed_seconds}) is longer than the training views (local_seconds "
                f"{self.local_seconds}, global_seconds {self.global_seconds}), so G has no positions for it; "
                "raise local_seconds to at least the observed duration"
            )
        return self
