"""Parameters of the speechbrain encoder and attackers, with VoicePrivacy's ASV_eval settings as defaults."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from vpeval.api import Params


class SpeechBrainParams(Params):
    """Reading and embedding with a SpeechBrain speaker-embedding folder (EncoderClassifier layout)."""

    source: str = Field(
        description="Local SpeechBrain folder: hyperparams.yaml + embedding_model.ckpt (VoicePrivacy's "
        "exp/asv_orig); its YAML is read as data, never run.",
    )
    batch_size: int = Field(
        32,
        ge=1,
        le=4096,
        description="Waveforms of similar length per batch: packed where the folder maps onto it (VoicePrivacy's "
        "released ECAPA and x-vector folders), else zero-padded on a GPU; 1, or a folder outside the packed "
        "path on the CPU: each utterance alone in the run's workers, as VoicePrivacy calls encode_batch.",
    )
    max_batch_seconds: float = Field(
        600.0, ge=1.0, le=36000.0, description="Most padded audio in one batch (seconds): bounds GPU memory."
    )
    peak_normalize: bool = Field(
        True, description="Divide each waveform by its peak first (VoicePrivacy's normalize_wave)."
    )
    trim_zeros: bool = Field(
        True, description="Cut leading and trailing exact zeros first (VoicePrivacy's np.trim_zeros)."
    )
    ssl_model: str | None = Field(
        None,
        description="VPC 2026 asv_ssl: the WavLM model for the SSL stream (UniLM .pt file or transformers "
        "folder); null: the source folder's WavLM-Large.pt when it has one (then the folder is read as asv_ssl).",
    )
    embedding_normalization: Literal["l2", "toolkit-sign"] = Field(
        "l2",
        description="asv_ssl (VPC 2026) only: l2, each embedding at unit length; toolkit-sign, as the VPC 2026 "
        "toolkit's extract_vector (e6810a4) leaves it: F.normalize(vec, dim=1) of the network's [1, 1, D] output "
        "divides each component by its own magnitude, so every component is +-1 (the sign of l2's). A quirk, "
        "kept only to give the challenge's official numbers; its results are labelled (docs/vpc.md).",
    )
    normalize_embeddings: bool = Field(
        False,
        description="Apply the folder's mean_var_norm_emb (global statistics from mean_var_norm_emb.ckpt) to "
        "each embedding; VoicePrivacy does not (encode_batch normalize=False).",
    )


# The VoicePrivacy recipes for the semi-informed attacker (configs/eval_post.yaml and the train hparams;
# tests/test_vpc_toolkit_recipes.py compares them with tests/data/vpc_toolkit_recipes.json, commits noted there).
RECIPES: dict[str, dict] = {
    # VPC 2024: ECAPA from scratch on anonymized train-clean-360, train_ecapa_tdnn_small.yaml (Adam, L2 decay).
    "vpc2024": {"start": "scratch", "epochs": 10, "batch_size": 256, "lr": 0.01, "optimizer": "adam"},
    # VPC 2026 Track 1: fine-tuned from the released model (pretrained_model), 2 epochs at batch 32, AdamW.
    "vpc2026-track1": {"start": "source", "epochs": 2, "batch_size": 32, "lr": 0.01, "optimizer": "adamw"},
}


class SpeechBrainTrainParams(SpeechBrainParams):
    """A semi-informed attacker that trains the folder's network, then embeds as VoicePrivacy does."""

    recipe: Literal["vpc2024", "vpc2026-track1"] = Field(
        "vpc2024",
        description="vpc2024: the folder's architecture from random weights, 10 epochs, batch 256; "
        "vpc2026-track1: fine-tune the folder's weights, 2 epochs, batch 32. Fields below override it.",
    )
    start: Literal["scratch", "source"] | None = Field(
        None, description="scratch: random weights of the folder's architecture; source: its weights (null: recipe)."
    )
    epochs: int | None = Field(None, ge=1, le=10_000, description="Training epochs (null: the recipe's).")
    train_batch_size: int | None = Field(None, ge=2, le=8192, description="Crops per training batch (null: recipe).")
    lr: float | None = Field(None, gt=0.0, le=1.0, description="Peak of the cyclic learning rate (null: recipe).")
    crop_seconds: float = Field(3.0, ge=0.2, le=60.0, description="Random training crops (sentence_len).")
    margin: float = Field(0.2, ge=0.0, lt=1.5, description="AAM softmax margin (ECAPA; x-vector: softmax).")
    scale: float = Field(30.0, gt=0.0, le=100.0, description="AAM softmax scale.")
    cyclic_step_size: int = Field(65000, ge=1, le=10_000_000, description="Batches per half cycle of the cyclic lr.")
    patience: int | None = Field(
        None, ge=1, le=10_000, description="Early stopping on validation EER; null trains every epoch (VPC)."
    )
    validation_share: float = Field(
        0.1, ge=0.0, lt=1.0, description="Share of each training speaker's utterances held out for validation."
    )
    max_grad_norm: float | None = Field(
        5.0,
        gt=0.0,
        le=1e6,
        description="Gradient clipping (L2 norm) before each step: speechbrain's Brain default, which the toolkit's "
        "training runs with; null: none.",
    )
    drop_short: bool = Field(
        True, description="Utterances shorter than a crop are left out, as the toolkit's prepare_csv; false: repeated."
    )
    augment: bool = Field(
        True,
        description="asv_ssl fine-tuning (VPC 2026) only: DropFreq and DropChunk on the training crops, as the "
        "toolkit's train_ecapa_ssl_tdnn_small.yaml (its wav_augment); the 2024 ECAPA recipe has none.",
    )
    keep_epoch: Literal["best", "last"] = Field(
        "last",
        description="last: the last epoch's weights, as the toolkit's evaluation loads its highest CKPT+<epoch>; "
        "best: the epoch of the lowest validation EER.",
    )

    def recipe_value(self, name: str):
        """The field's value, or the recipe's where the field is null."""
        own = getattr(self, "train_batch_size" if name == "batch_size" else name)
        return RECIPES[self.recipe][name] if own is None else own


# A tiny network for CPU tests and contract suites (not results).
CPU_TEST_TRAINING = {"epochs": 1, "train_batch_size": 4, "crop_seconds": 0.5, "validation_share": 0.0}
