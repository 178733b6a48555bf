"""mimi: Kyutai's Mimi codec, Moshi's speech frontend, through transformers' MimiModel."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from vpeval.api import Params
from vpeval.errors import ConfigError, MissingModelError
from vpeval.types import FrontendOutput
from vpeval_slm_frontends.base import TorchFrontend
from vpeval_slm_frontends.weights import require_folder


class MimiFrontend(TorchFrontend):
    """Mimi (Moshi's frontend): 24 kHz audio to residual-VQ tokens at 12.5 frames/s.

    Interface (seed 002): tokens [N, Q] with N = ceil(seconds * 12.5); codebook 0 is the semantic
    codebook (distilled from WavLM), codebooks 1..Q-1 are acoustic residual codebooks, each of
    2048 entries (codebook_sizes = (2048,) * Q). Moshi uses Q = 8 (1 semantic + 7 acoustic); Mimi
    has 32 trained codebooks and num_codebooks takes the first Q. No continuous features are
    exposed. Tokens are transformers' MimiModel.encode(...).audio_codes.

    Weights: set weights to a local folder holding config.json and model.safetensors of the
    Hugging Face checkpoint kyutai/mimi (download it once elsewhere; vpeval never downloads).
    config (a MimiConfig dict) builds a random-weight model instead, for tests.
    """

    name = "mimi"
    sample_rate = 24000
    frame_rate = 12.5

    class Params(Params):
        weights: str | None = Field(
            None, description="Local folder with config.json and model.safetensors of kyutai/mimi."
        )
        config: dict[str, Any] | None = Field(
            None, description="A transformers MimiConfig as a dict: builds random weights instead (tests)."
        )
        num_codebooks: int = Field(8, ge=1, le=32, description="Codebooks exposed: 1 semantic + (Q-1) acoustic; Moshi uses 8.")
        device: str = Field("cpu", description="torch device to run the codec on.")

    def _load(self):
        from transformers import MimiConfig, MimiModel

        if self.params.config is not None:
            model = MimiModel(MimiConfig(**self.params.config))
        else:
            folder = require_folder(self.name, "weights", self.params.weights, "config.json and model.safetensors of kyutai/mimi")
            model = MimiModel.from_pretrained(str(folder), local_files_only=True)
        config = model.config
        if config.sampling_rate != self.sample_rate:
            raise MissingModelError(
                f"The mimi weights run at {config.sampling_rate} Hz but the mimi frontend expects {self.sample_rate} Hz; "
                "point weights at a kyutai/mimi checkpoint."
            )
        if self.params.num_codebooks > config.num_quantizers:
            raise ConfigError(
                f"mimi parameter num_codebooks={self.params.num_codebooks} exceeds the {config.num_quantizers} "
                "codebooks of the loaded model; lower it."
            )
        self.frame_rate = float(config.frame_rate)
        return model.to(self.params.device)

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        import torch

        model = self.model
        with torch.inference_mode():
            codes = model.encode(self._tensor(audio)[None, None], num_quantizers=self.params.num_codebooks).audio_codes
        tokens = codes[0].T.cpu().numpy().astype(np.int64)  # [Q, N] -> [N, Q]
        return FrontendOutput(self.frame_rate, tokens, (int(model.config.codebook_size),) * tokens.shape[1])
