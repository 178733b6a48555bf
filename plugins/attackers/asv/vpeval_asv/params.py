"""Parameters of the trained ASV attackers, with the VoicePrivacy 2024 ASV_eval defaults.

The defaults follow the challenge's speechbrain recipes (evaluation/privacy/asv/asv_train/hparams/
train_ecapa_tdnn_small.yaml and train_x_vectors.yaml, with lr 0.01 / batch 256 / 10 epochs from
configs/eval_post.yaml). CPU tests scale channels, epochs, crops and batch size down.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from vpeval.api import Params

MAX_MELS = 128  # a 25 ms window at 16 kHz has 201 frequency bins
MAX_CHANNELS = 8192
Channel = Annotated[int, Field(ge=1, le=MAX_CHANNELS)]


class AsvParams(Params):
    """Fields shared by every trained speaker-embedding attacker (model, training, back-end)."""

    # -- model ----------------------------------------------------------------------------
    # Upper bounds keep a typo from allocating terabytes: the largest published sizes are far below them.
    n_mels: int = Field(80, ge=8, le=MAX_MELS, description="Log-mel filterbank channels (speechbrain Fbank, 16 kHz).")
    channels: tuple[Channel, ...] = Field(
        (512, 512, 512, 512, 1536), description=f"Channels of the five TDNN / SE-Res2Net blocks (1-{MAX_CHANNELS})."
    )
    embedding_dim: int = Field(
        192, ge=2, le=MAX_CHANNELS, description="Speaker embedding size (the last linear layer)."
    )

    # -- loss -----------------------------------------------------------------------------
    loss: Literal["aam", "softmax"] = Field(
        "aam", description="aam: additive angular margin softmax on a cosine classifier; softmax: plain cross-entropy."
    )
    margin: float = Field(0.2, ge=0.0, lt=1.5, description="Angular margin of the AAM softmax (radians, below pi/2).")
    scale: float = Field(
        30.0, gt=0.0, le=100.0, description="Scale of the AAM softmax logits (float32 overflows far above)."
    )

    # -- optimisation ---------------------------------------------------------------------
    epochs: int = Field(
        10, ge=1, le=10_000, description="Training epochs (an epoch visits every crop-length stretch of audio once)."
    )
    batch_size: int = Field(256, ge=2, le=8192, description="Crops per batch.")
    optimizer: Literal["adamw", "adam"] = Field(
        "adamw",
        description="adamw: decoupled weight decay; adam: torch.optim.Adam, whose weight decay is an L2 term in the "
        "gradient (VPC 2024's train_ecapa_tdnn_small.yaml).",
    )
    lr: float = Field(0.01, gt=0.0, le=1.0, description="Peak learning rate.")
    weight_decay: float = Field(2e-6, ge=0.0, le=1.0, description="Weight decay of the optimizer.")
    lr_schedule: Literal["cyclic", "linear", "constant"] = Field(
        "cyclic",
        description="cyclic: triangular cyclic LR per batch from base_lr to lr (speechbrain CyclicLRScheduler); "
        "linear: per epoch from lr to final_lr; constant: lr throughout.",
    )
    base_lr: float = Field(1e-8, ge=0.0, le=1.0, description="Lower bound of the cyclic schedule.")
    cyclic_step_size: int = Field(
        65000, ge=1, le=10_000_000, description="Batches per half cycle of the cyclic schedule."
    )
    final_lr: float = Field(1e-4, ge=0.0, le=1.0, description="Last-epoch learning rate of the linear schedule.")
    max_grad_norm: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        description="Clip the gradient of the network and classifier together to this L2 norm before each step "
        "(speechbrain's Brain clips at 5.0, so VoicePrivacy's training does); null: no clipping.",
    )
    crop_seconds: float = Field(3.0, ge=0.2, le=60.0, description="Length of the random training crops (seconds).")
    drop_short: bool = Field(
        False,
        description="Leave utterances shorter than one crop out of training (VoicePrivacy's data preparation lists "
        "no segment for them); false: each gives one crop, its audio repeated to fill it.",
    )

    # -- validation and early stopping -----------------------------------------------------
    validation_share: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="Share of each speaker's utterances held out when no validation corpus is given.",
    )
    validation_trials: int = Field(
        2000, ge=10, le=10_000_000, description="Random validation trial pairs (half target, half non-target)."
    )
    validation_max_utterances: int = Field(
        1000, ge=4, le=1_000_000, description="Most validation utterances embedded per epoch."
    )
    patience: int | None = Field(
        2,
        ge=1,
        le=10_000,
        description="Stop after this many epochs without a lower validation EER; null never stops early.",
    )
    min_epochs: int = Field(2, ge=1, le=10_000, description="Epochs trained before early stopping may stop.")
    keep_epoch: Literal["best", "last"] = Field(
        "best",
        description="The weights kept after training: best, those of the epoch with the lowest validation EER; "
        "last, the last epoch's (what VoicePrivacy's evaluation loads: scan_checkpoint's highest CKPT+<epoch>).",
    )
    init_from: str | None = Field(
        None, description="Checkpoint folder (or its embedding_model.pt) to fine-tune from instead of random weights."
    )

    # -- embedding and back-end -------------------------------------------------------------
    embed_max_seconds: float | None = Field(
        None,
        ge=0.2,
        le=3600.0,
        description="Embed at most this many seconds of each utterance (its start); null embeds all.",
    )
    backend: Literal["cosine", "plda"] = Field(
        "cosine", description="Scoring: cosine of length-normalised vectors, or two-covariance PLDA."
    )
    plda_dim: int = Field(150, ge=1, le=MAX_CHANNELS, description="LDA dimension before PLDA (capped at speakers - 1).")
    as_norm: bool = Field(
        False, description="Adaptive symmetric score normalisation against the training-speaker cohort."
    )
    cohort_top_k: int = Field(200, ge=1, le=100_000, description="Closest cohort speakers used by AS-norm.")
    backend_utterances_per_speaker: int = Field(
        10, ge=1, le=100_000, description="Training utterances per speaker embedded for the cohort and PLDA."
    )
    embed_batch_size: int = Field(
        64, ge=1, le=65_536, description="Most utterances embedded together in one packed batch (similar lengths)."
    )
    embed_batch_frames: int | None = Field(
        None,
        ge=100,
        le=100_000_000,
        description="Most feature frames (10 ms each) in one embedding batch, bounding its memory; "
        "null: 8000 on a CPU (fastest there), 200000 on a GPU.",
    )
    audio_cache_mb: int = Field(
        2048,
        ge=0,
        le=1_048_576,
        description="Validation audio kept in memory between epochs (MB); training crops are read from disk.",
    )
    loader_workers: int | None = Field(
        None,
        ge=0,
        le=64,
        description="Processes reading training crops from disk (torch DataLoader workers); 0 reads them in "
        "the training process; null: 4 on a GPU, 0 on the CPU (where workers only compete with training).",
    )

    @model_validator(mode="after")
    def _check_channels(self) -> AsvParams:
        if len(self.channels) != 5:
            raise ValueError(f"channels needs 5 values (one per block), got {len(self.channels)}")
        return self


class EcapaParams(AsvParams):
    """ECAPA-TDNN as VoicePrivacy 2024 ASV_eval trains it."""

    @model_validator(mode="after")
    def _check_res2net(self) -> EcapaParams:
        if any(c % 8 for c in self.channels[:4]):
            raise ValueError("ECAPA channels of the first four blocks must be multiples of 8 (Res2Net scale 8)")
        return self


class XvectorParams(AsvParams):
    """The TDNN x-vector as VoicePrivacy 2024's train_x_vectors.yaml trains it."""

    n_mels: int = Field(24, ge=8, le=MAX_MELS, description="Log-mel filterbank channels (speechbrain Fbank, 16 kHz).")
    channels: tuple[Channel, ...] = Field(
        (512, 512, 512, 512, 1500), description=f"Channels of the five TDNN layers (1-{MAX_CHANNELS})."
    )
    embedding_dim: int = Field(
        512, ge=2, le=MAX_CHANNELS, description="x-vector size (the segment-level linear layer)."
    )
    loss: Literal["aam", "softmax"] = Field(
        "softmax", description="softmax: cross-entropy over a linear classifier (the recipe's); aam: angular margin."
    )
    epochs: int = Field(20, ge=1, le=10_000, description="Training epochs.")
    lr: float = Field(0.001, gt=0.0, le=1.0, description="Initial learning rate of AdamW.")
    lr_schedule: Literal["cyclic", "linear", "constant"] = Field(
        "linear", description="linear: per epoch from lr to final_lr (the recipe's LinearScheduler); cyclic; constant."
    )


# A network small enough to train in seconds on CPU: for contract suites and plugin tests, not results.
CPU_TEST_SIZE = {
    "channels": [16, 16, 16, 16, 48],
    "embedding_dim": 16,
    "epochs": 2,
    "batch_size": 8,
    "crop_seconds": 0.5,
    "lr": 0.005,
    "lr_schedule": "constant",
}
