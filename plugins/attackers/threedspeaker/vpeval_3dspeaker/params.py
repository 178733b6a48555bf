"""Parameters of the campplus and eres2net encoders; defaults are the published networks' (3D-Speaker infer_sv.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from vpeval.api import Params


class FolderParams(Params):
    """What both encoders read: the model file, its layout, the front end's size and the batching."""

    source: str = Field(
        description="Local model folder or file: 3D-Speaker's checkpoint (campplus_voxceleb.bin, "
        "pretrained_eres2net.ckpt, ...), WeSpeaker's avg_model.pt, or either's ONNX export (*.onnx)."
    )
    format: Literal["auto", "torch", "onnx"] = Field(
        "auto", description="auto: the folder's torch checkpoint, else its ONNX export; torch / onnx: only that."
    )
    layout: Literal["auto", "3dspeaker", "wespeaker"] = Field(
        "auto",
        description="Whose front end the model was trained on: 3dspeaker (fbank of float waveforms, povey window) "
        "or wespeaker (int16-scaled waveforms, hamming window); auto: wespeaker where the checkpoint has "
        "WeSpeaker's key names or the ONNX input is named feats, else 3dspeaker. Either key names load.",
    )
    feat_dim: int = Field(80, ge=8, le=512, description="Kaldi fbank mel bins (the networks' feat_dim; 80 published).")
    embedding_size: int | None = Field(
        None, ge=1, le=8192, description="Embedding size; null: the checkpoint's (the last layer's rows)."
    )
    batch_size: int = Field(
        32, ge=1, le=4096, description="Utterances of similar length per zero-padded, masked batch (embed_batch)."
    )
    max_batch_seconds: float = Field(
        600.0, ge=1.0, le=36000.0, description="Most padded audio in one batch (seconds): bounds memory."
    )

    @field_validator("feat_dim")
    @classmethod
    def _multiple_of_eight(cls, value: int) -> int:
        if value % 8:
            raise ValueError(f"feat_dim must be a multiple of 8 (the networks divide frequency by 8), got {value}")
        return value


class CampplusParams(FolderParams):
    """CAM++ as 3D-Speaker's CAMPPlus(feat_dim, embedding_size, growth_rate, bn_size, init_channels)."""

    growth_rate: int = Field(32, ge=1, le=1024, description="Channels each dense TDNN layer adds (published 32).")
    bn_size: int = Field(4, ge=1, le=64, description="Bottleneck width in growth_rate units (published 4).")
    init_channels: int = Field(128, ge=2, le=4096, description="Channels of the first TDNN layer (published 128).")


class ERes2NetParams(FolderParams):
    """ERes2Net as 3D-Speaker's ERes2Net.py; ERes2Net_huge.py is m_channels 64, base_width 24, scale 3, expansion 4."""

    m_channels: int = Field(32, ge=1, le=1024, description="Channels of the first stage (32 VoxCeleb/base, 64 large).")
    num_blocks: tuple[
        Annotated[int, Field(ge=1, le=256)],
        Annotated[int, Field(ge=1, le=256)],
        Annotated[int, Field(ge=1, le=256)],
        Annotated[int, Field(ge=1, le=256)],
    ] = Field((3, 4, 6, 3), description="Residual blocks per stage (each 1-256).")
    base_width: int = Field(32, ge=1, le=1024, description="Res2Net branch width per 64 planes (baseWidth).")
    scale: int = Field(2, ge=1, le=16, description="Res2Net branches per block.")
    expansion: int = Field(2, ge=1, le=16, description="Block output channels per plane.")
    two_emb_layer: bool = Field(False, description="A second embedding layer after the first (published: false).")

    @field_validator("num_blocks")
    @classmethod
    def _positive(cls, value: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        if min(value) < 1:
            raise ValueError(f"every stage needs at least one block, got {list(value)}")
        return value
