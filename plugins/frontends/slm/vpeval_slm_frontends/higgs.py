"""higgs: the Higgs audio v2 tokenizer (Higgs Audio, OmniVoice) through transformers."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from vpeval.api import Params
from vpeval.errors import ConfigError, MissingModelError
from vpeval.types import FrontendOutput
from vpeval_slm_frontends.base import TorchFrontend
from vpeval_slm_frontends.weights import require_folder


class HiggsFrontend(TorchFrontend):
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
        device: str = Field("cpu", description="torch device to run the tokenizer on.")

    def _load(self):
        from transformers import HiggsAudioV2TokenizerConfig, HiggsAudioV2TokenizerModel

        if self.params.config is not None:
            model = HiggsAudioV2TokenizerModel(HiggsAudioV2TokenizerConfig(**self.params.config))
        else:
            folder = require_folder(
                self.name, "weights", self.params.weights, "config.json and model.safetensors of bosonai/higgs-audio-v2-tokenizer"
            )
            model = HiggsAudioV2TokenizerModel.from_pretrained(str(folder), local_files_only=True)
        config = model.config
        if config.sample_rate != self.sample_rate:
            raise MissingModelError(
                f"The higgs weights run at {config.sample_rate} Hz but the higgs frontend expects {self.sample_rate} Hz; "
                "point weights at a bosonai/higgs-audio-v2-tokenizer checkpoint."
            )
        if self.params.num_codebooks is not None and self.params.num_codebooks > config.num_quantizers:
            raise ConfigError(
                f"higgs parameter num_codebooks={self.params.num_codebooks} exceeds the {config.num_quantizers} "
                "codebooks of the loaded tokenizer; lower it."
            )
        self.frame_rate = float(config.frame_rate)
        return model.to(self.params.device)

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        import torch

        model = self.model
        with torch.inference_mode():
            codes = model.encode(self._tensor(audio)[None, None]).audio_codes
        tokens = codes[0].T.cpu().numpy().astype(np.int64)[:, : self.params.num_codebooks]
        return FrontendOutput(self.frame_rate, tokens, (int(model.config.codebook_size),) * tokens.shape[1])
