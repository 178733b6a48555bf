"""higgs: the Higgs audio v2 tokenizer (Higgs Audio, OmniVoice) through transformers."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from vpeval.api import Params
from vpeval_slm_frontends.codec import CodecFrontend


class HiggsFrontend(CodecFrontend):
    """Higgs audio v2 tokenizer: 24 kHz audio to eight residual-VQ codebooks at 25 frames/s.

    Interface (seed 002): tokens [N, Q] with N = ceil(seconds * 25) and Q = 8 codebooks of 1024
    entries; no continuous features. The tokenizer fuses a DAC acoustic encoder with HuBERT
    semantic features and quantizes them with an 8-stage residual VQ
    (transformers' HiggsAudioV2TokenizerModel.encode(...).audio_codes at the highest bandwidth).
    frame_rate and the codebook count come from the loaded config (sample_rate / hop_length and
    its bandwidth); num_codebooks keeps the first Q (RVQ prefixes are lower bandwidths).

    Weights: set weights to a local folder holding config.json and model.safetensors of the
    Hugging Face checkpoint bosonai/higgs-audio-v2-tokenizer in transformers format (vpeval never
    downloads). config (a HiggsAudioV2TokenizerConfig dict) builds random weights, for tests.
    """

    name = "higgs"
    sample_rate = 24000
    frame_rate = 25.0
    checkpoint = "bosonai/higgs-audio-v2-tokenizer"
    rate_field = "sample_rate"
    part = "tokenizer"

    class Params(Params):
        weights: str | None = Field(
            None,
            description="Local folder with config.json and model.safetensors of bosonai/higgs-audio-v2-tokenizer "
            "(transformers format).",
        )
        config: dict[str, Any] | None = Field(
            None, description="A HiggsAudioV2TokenizerConfig as a dict: builds random weights instead (tests)."
        )
        num_codebooks: int | None = Field(None, ge=1, le=32, description="Codebooks exposed; None: all of them (8).")
        batch_size: int = Field(16, ge=1, le=4096, description="Waveforms per encode_batch batch (run's device).")

    def _classes(self) -> tuple[type, type]:
        from transformers import HiggsAudioV2TokenizerConfig, HiggsAudioV2TokenizerModel

        return HiggsAudioV2TokenizerModel, HiggsAudioV2TokenizerConfig

    def _codes(self, model: Any, audio: Any) -> Any:
        return model.encode(audio).audio_codes[:, : self.params.num_codebooks]  # an RVQ prefix
