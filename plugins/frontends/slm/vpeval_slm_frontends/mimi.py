"""mimi: Kyutai's Mimi codec, Moshi's speech frontend, through transformers' MimiModel."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from vpeval.api import Params
from vpeval_slm_frontends.codec import CodecFrontend


class MimiFrontend(CodecFrontend):
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
    checkpoint = "kyutai/mimi"
    pads_exactly = True  # causal convolutions and attention: zeros after the audio change none of its frames

    class Params(Params):
        weights: str | None = Field(
            None, description="Local folder with config.json and model.safetensors of kyutai/mimi."
        )
        config: dict[str, Any] | None = Field(
            None, description="A transformers MimiConfig as a dict: builds random weights instead (tests)."
        )
        num_codebooks: int = Field(
            8, ge=1, le=32, description="Codebooks exposed: 1 semantic + (Q-1) acoustic; Moshi uses 8."
        )
        batch_size: int = Field(16, ge=1, le=4096, description="Waveforms per encode_batch batch (run's device).")

    def _classes(self) -> tuple[type, type]:
        from transformers import MimiConfig, MimiModel

        return MimiModel, MimiConfig

    def _codes(self, model: Any, audio: Any) -> Any:
        return model.encode(audio, num_quantizers=self.params.num_codebooks).audio_codes
