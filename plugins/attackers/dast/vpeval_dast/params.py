"""Parameters of the DAST attacker, with the paper's defaults (seed 001, sections 2 and 3.2).

Where the paper gives no value (AAM margin and scale, SpecAugment sizes, crop length) the defaults
are SpeechBrain's ECAPA recipe and Park et al.'s LibriSpeech-basic SpecAugment policy, and the field
says so. CPU tests scale channels, epochs, crops and batch sizes down (CPU_TEST_SIZE).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from vpeval.api import Params, PluginRef
from vpeval.speakers import CorpusSpec

MAX_CHANNELS = 8192
Channel = Annotated[int, Field(ge=8, le=MAX_CHANNELS)]
StageName = Literal["I", "II", "III"]
STAGE_ORDER = ("I", "II", "III")


class SslParams(Params):
    """The frozen multi-layer speech model of the SSL stream."""

    kind: Literal["whisper-ct2", "whisper", "wavlm", "frontend"] = Field(
        "whisper-ct2",
        description="whisper-ct2: the packaged Whisper-base encoder in CTranslate2 format, read into transformers' "
        "WhisperEncoder (a stand-in: an ASR encoder, not an SSL model); whisper: a transformers Whisper folder at "
        "`path`; wavlm: a transformers WavLM folder at `path`; frontend: the layers of a frontend plugin, for the "
        "paper's WavLM-Large `{kind: frontend, frontend: wavlm, frontend_params: {model: DIR}}` (section 3.2).",
    )
    model: Literal["whisper-base"] = Field(
        "whisper-base", description="Which packaged CTranslate2 Whisper (kind whisper-ct2 only)."
    )
    path: str | None = Field(None, description="Local model folder (kinds whisper and wavlm).")
    frontend: Annotated[str | None, PluginRef("frontend", params="frontend_params")] = Field(
        None, description="The frontend plugin whose every-layer features are the stream (kind frontend)."
    )
    frontend_params: dict[str, Any] = Field(
        default_factory=dict, description="Its parameters (for wavlm: model, a local folder, and layers: all)."
    )

    @model_validator(mode="after")
    def _path_when_needed(self) -> SslParams:
        if self.kind in ("whisper", "wavlm") and not self.path:
            raise ValueError(f"ssl kind {self.kind} loads a local model folder: give `path`")
        if self.kind in ("whisper-ct2", "frontend") and self.path:
            raise ValueError(f"ssl kind {self.kind} does not read `path`: remove it")
        if (self.kind == "frontend") != (self.frontend is not None):
            raise ValueError("ssl kind frontend needs `frontend: <frontend plugin>`, and only it takes one")
        if self.frontend_params and self.kind != "frontend":
            raise ValueError("frontend_params are for ssl kind frontend only")
        return self


class StageParams(Params):
    """Optimisation of one curriculum stage (paper section 3.2)."""

    epochs: int | None = Field(None, ge=1, le=10_000, description="Epochs; null: the paper's value for the stage.")
    batch_size: int = Field(64, ge=2, le=8192, description="Crops per batch.")
    grad_accumulation: int = Field(4, ge=1, le=1024, description="Batches whose gradients are summed per step.")
    dropout: float = Field(
        0.3, ge=0.0, lt=1.0, description="Dropout of the ECAPA TDNN blocks (SpeechBrain ECAPA's `dropout`)."
    )
    optimizer: Literal["adamw", "muon"] = Field(
        "adamw",
        description="adamw, or muon (torch.optim.Muon on the hidden weight matrices and flattened convolutions; "
        "AdamW on the AAM head, the embedding layer and every 1-d parameter, as Muon's authors use it).",
    )
    corpus: Annotated[CorpusSpec | None, PluginRef("corpus")] = Field(
        None,
        description="Stages I and III: a corpus plugin to train on instead of the core's training speech (Stage I: "
        "for example VoxCeleb2 as a kaldi folder; Stage III: the target's anonymized training data); null: the "
        "speech the core gives (train_on). Stage II reads stage2_corpora instead.",
    )


def _stage1() -> StageParams:
    return StageParams(epochs=1, batch_size=64, grad_accumulation=4, dropout=0.0, optimizer="adamw")


def _stage2() -> StageParams:
    return StageParams(epochs=2, batch_size=64, grad_accumulation=4, dropout=0.3, optimizer="muon")


def _stage3() -> StageParams:
    return StageParams(epochs=None, batch_size=32, grad_accumulation=1, dropout=0.3, optimizer="adamw")


PAPER_STAGES = {"stage1": _stage1, "stage2": _stage2, "stage3": _stage3}


class ConversionSystem(Params):
    """One anonymizer plugin that converts the attacker-training speech for Stage II."""

    use: Annotated[str, PluginRef("anonymizer", params="params", works_on="waveform")]
    params: dict[str, Any] = Field(default_factory=dict)
    label: str | None = Field(None, description="Name in logs and stage folders (default: use).")

    @property
    def name(self) -> str:
        return self.label or self.use


class ConvertedCorpus(Params):
    """A corpus of speech another toolkit converted (one voice-conversion system, as SSTC ships them):
    read by a corpus plugin, labelled by its speakers (the source speakers), for Stage II."""

    use: Annotated[str, PluginRef("corpus", params="params")] = Field(description="Corpus plugin (manifest, kaldi).")
    params: dict[str, Any] = Field(default_factory=dict)
    label: str | None = Field(None, description="Name of the system in logs and the overlap check (default: use).")

    @property
    def name(self) -> str:
        return self.label or self.use


class DastParams(Params):
    """DAST: dual-stream ECAPA-TDNN with mid-level fusion, trained in up to three stages."""

    # -- architecture (section 2.1) --------------------------------------------------------
    fusion: Literal["fbank", "ssl", "raw", "mid"] = Field(
        "mid",
        description="fbank / ssl: one stream alone; raw: both feature streams concatenated into one encoder; "
        "mid: two encoders, frame features multiplied element-wise (the paper's, Table 1).",
    )
    n_mels: int = Field(80, ge=8, le=128, description="Fbank channels (section 3.2: 80).")
    ssl: SslParams = Field(default_factory=SslParams, description="The frozen SSL model (unused with fusion: fbank).")
    channels: tuple[Channel, ...] = Field(
        (1024, 1024, 1024, 1024, 3072),
        description="Channels of the five ECAPA blocks of each frame encoder (section 3.2: 1,024; the last is the "
        "multi-layer aggregation, 3x as in SpeechBrain's ECAPA).",
    )
    attention_channels: int = Field(128, ge=1, le=MAX_CHANNELS, description="Attentive statistics pooling width.")
    embedding_dim: int = Field(192, ge=2, le=MAX_CHANNELS, description="Speaker embedding size (SpeechBrain default).")
    margin: float = Field(0.2, ge=0.0, lt=1.5, description="AAM-softmax margin (not in the paper; SpeechBrain's).")
    scale: float = Field(30.0, gt=0.0, le=100.0, description="AAM-softmax scale (not in the paper; SpeechBrain's).")

    # -- SpecAugment (section 3.2, Park et al. 2019 LB policy) ---------------------------------
    specaugment_streams: Literal["both", "fbank"] = Field(
        "both",
        description="both: the Fbank frames and the SSL states are masked (section 3.2 applies SpecAug to the "
        "input features; on the SSL states the masks have the same duration and the same share of the channels); "
        "fbank: the Fbank stream only (vpeval before 0.2).",
    )
    freq_masks: int = Field(1, ge=0, le=16, description="Frequency masks per crop.")
    freq_mask_width: int = Field(27, ge=0, le=128, description="Largest frequency mask, in mel channels (F).")
    time_masks: int = Field(1, ge=0, le=64, description="Time masks per crop.")
    time_mask_width: int = Field(100, ge=0, le=10_000, description="Largest time mask, in 10 ms frames (T).")

    # -- curriculum (section 2.2) ------------------------------------------------------------
    stages: list[StageName] = Field(
        default_factory=lambda: ["I", "II", "III"],
        description="Stages to run, in order: any non-empty ordered subset of I, II, III (Table 2).",
    )
    stage2_anonymizers: list[ConversionSystem] = Field(
        default_factory=list,
        description="Anonymizer plugins whose conversions of the attacker-training speech make Stage II's data; "
        "must not include the experiment's target anonymizers.",
    )
    stage2_corpora: list[ConvertedCorpus] = Field(
        default_factory=list,
        description="Pre-converted voice-conversion corpora for Stage II (a folder or manifest per system, as SSTC "
        "ships them), read through corpus plugins, besides or instead of stage2_anonymizers.",
    )
    stage2_level: Literal["utterance", "speaker"] = Field(
        "utterance", description="A new pseudo-voice per utterance or one per speaker in Stage II conversions."
    )
    stage3_fraction: float = Field(
        1.0, ge=0.05, le=1.0, description="Share of each speaker's target-anonymized utterances Stage III trains on."
    )
    stage1: StageParams = Field(default_factory=_stage1)
    stage2: StageParams = Field(default_factory=_stage2)
    stage3: StageParams = Field(default_factory=_stage3)

    # -- optimisation shared by the stages -----------------------------------------------------
    lr: float = Field(1e-3, gt=0.0, le=1.0, description="Peak learning rate of the cyclical schedule (3.2: 1e-3).")
    base_lr: float = Field(
        1e-8,
        ge=0.0,
        le=1.0,
        description="Lowest learning rate of the cyclical schedule (the paper gives only 1e-3; 1e-8 is the "
        "base_lr of SpeechBrain's VoxCeleb ECAPA recipe, which the paper's models are built with).",
    )
    clr_cycles: float = Field(1.0, gt=0.0, le=1000.0, description="Triangular CLR cycles per stage (not in the paper).")
    weight_decay: float = Field(2e-6, ge=0.0, le=1.0, description="AdamW weight decay (SpeechBrain ECAPA's).")
    crop_seconds: float = Field(3.0, ge=0.2, le=60.0, description="Training crop length (SpeechBrain ECAPA's).")
    embed_max_seconds: float | None = Field(
        None, ge=0.2, le=3600.0, description="Embed at most this many seconds; null: all."
    )
    average: Literal["embeddings", "unit-embeddings"] = Field(
        "embeddings",
        description="A trial side's embedding: the mean of its utterances' embeddings (3.2: 'cosine distance "
        "between averaged enrollment and test embeddings'), or of their unit vectors (vpeval's earlier default).",
    )
    embed_batch_size: int = Field(
        16, ge=1, le=4096, description="Utterances per padded embedding batch (grouped by length)."
    )
    loader_workers: int | None = Field(
        None,
        ge=0,
        le=64,
        description="Processes reading training crops from disk (0: in this process); null: 4 on a GPU, 0 on the "
        "CPU (where a crop's read is cheap beside a training step and workers would take the training's cores). "
        "The batches are the same for any number.",
    )
    ssl_context: Literal["crop", "utterance"] = Field(
        "crop",
        description="What the frozen SSL model hears in training: each training crop (computed per batch on the "
        "device), or the whole utterance, once per run, its frames then cropped with the audio (as embedding hears "
        "whole utterances). With utterance the states are stored on disk in float16 (memory-mapped, about 0.3 MB "
        "per second of audio for Whisper-base, 2.4 MB for WavLM-Large) in the run cache and shared by the run's "
        "dast attackers for training and embedding: several times faster on a CPU. Not in the paper.",
    )
    validation_trials: int = Field(
        2000,
        ge=10,
        le=10_000_000,
        description="Random trial pairs (half target) on the experiment's validation speakers, scored after every "
        "epoch of every stage for the training curve and the report's under-training alarm; DAST trains fixed "
        "epochs (section 3.2), so no epoch is selected by it. Without validation speakers none is recorded.",
    )
    validation_max_utterances: int = Field(
        1000, ge=4, le=1_000_000, description="Most validation utterances embedded after each epoch."
    )
    init_from: str | None = Field(
        None,
        description="A folder a dast attacker saved (or its stages/<stage> folder) to start from, for example a "
        "released Stage II model; the experiment's `init_from: <label>` does the same within one run.",
    )

    @field_validator("stage1", "stage2", "stage3", mode="before")
    @classmethod
    def _over_the_stage_defaults(cls, value: Any, info) -> Any:
        """A stage given in part keeps that stage's paper settings for the rest (`stage3: {epochs: 30}` is
        still batch 32 without accumulation; `stage2: {epochs: 5}` still Muon), not StageParams' generic ones."""
        if isinstance(value, dict):
            return {**PAPER_STAGES[info.field_name]().model_dump(), **value}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> DastParams:
        if len(self.channels) != 5:
            raise ValueError(f"channels needs 5 values (one per ECAPA block), got {len(self.channels)}")
        if any(c % 8 for c in self.channels[:4]):
            raise ValueError("channels of the first four ECAPA blocks must be multiples of 8 (Res2Net scale 8)")
        if not self.stages:
            raise ValueError("stages needs at least one of I, II, III")
        if list(self.stages) != sorted(set(self.stages), key=STAGE_ORDER.index):
            raise ValueError(f"stages must be distinct and in curriculum order I, II, III, got {list(self.stages)}")
        if "II" in self.stages and not (self.stage2_anonymizers or self.stage2_corpora):
            raise ValueError(
                "Stage II trains on converted speech: list at least one anonymizer in stage2_anonymizers or one "
                "converted corpus in stage2_corpora"
            )
        names = [s.name for s in [*self.stage2_anonymizers, *self.stage2_corpora]]
        if len(set(names)) != len(names):
            raise ValueError(
                "two Stage II systems (stage2_anonymizers, stage2_corpora) have the same name; give one a `label`"
            )
        if self.stage2.corpus is not None:
            raise ValueError("stage2.corpus: Stage II reads converted corpora from stage2_corpora (one per system)")
        return self

    @property
    def uses_ssl(self) -> bool:
        return self.fusion != "fbank"

    @property
    def uses_fbank(self) -> bool:
        return self.fusion != "ssl"

    def stage_corpus(self, name: str) -> CorpusSpec | None:
        """The corpus plugin a stage reads instead of the core's speech (stages I and III), or None."""
        return self.stage(name).corpus if name in ("I", "III") else None

    def stage(self, name: str) -> StageParams:
        return {"I": self.stage1, "II": self.stage2, "III": self.stage3}[name]

    def stage_epochs(self, name: str) -> int:
        """The stage's epochs; Stage III's paper default depends on the data share (section 3.2)."""
        given = self.stage(name).epochs
        if given is not None:
            return given
        if name == "I":
            return 1
        if name == "II":
            return 2
        return 2 if self.stage3_fraction >= 1.0 else 4 if self.stage3_fraction >= 0.5 else 6


# A network small enough to train in seconds on CPU: for contract suites and plugin tests, not results.
CPU_TEST_SIZE: dict[str, Any] = {
    "channels": [16, 16, 16, 16, 48],
    "attention_channels": 8,
    "embedding_dim": 16,
    "stages": ["I"],
    "stage1": {"epochs": 2, "batch_size": 8, "grad_accumulation": 1, "dropout": 0.0},
    "crop_seconds": 0.5,
    "lr": 0.005,
    "time_mask_width": 10,
    "freq_mask_width": 8,
    "fusion": "fbank",
}
