"""qwen: Qwen3-Omni's audio encoder (the thinker's audio tower) through transformers."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from pydantic import Field

from vpeval.api import Params
from vpeval.errors import MissingModelError
from vpeval.types import FrontendOutput
from vpeval_slm_frontends.base import TorchFrontend
from vpeval_slm_frontends.weights import read_state_dict, require_folder

TOWER_PREFIX = "thinker.audio_tower."
NEEDS = (
    "config.json and safetensors of Qwen/Qwen3-Omni-30B-A3B-Instruct (only the thinker.audio_tower tensors are "
    "read) or of its audio encoder saved alone"
)


class QwenFrontend(TorchFrontend):
    """Qwen3-Omni audio encoder: 16 kHz audio to continuous frame features, no tokens.

    Interface (seed 002): features [N, D] (D = output_dim, 2048 in Qwen3-Omni-30B-A3B) from
    128-band Whisper log-mel frames (100/s), windowed into 1 s chunks whose three stride-2 conv
    layers leave 13 frames per chunk, then the Audio Transformer (transformers'
    Qwen3OmniMoeAudioEncoder). The paper calls this 12.5 Hz (an 80 ms hop); per second of audio
    the encoder emits 13 frames, so frame_rate is 13 and N = 13 * whole seconds + the tail's frames.

    Weights: set weights to a local folder with the full Qwen3-Omni checkpoint (config.json of
    model_type qwen3_omni_moe, model.safetensors.index.json and the shards; only the shards with
    thinker.audio_tower.* tensors are read), or with the audio encoder saved on its own
    (config.json of model_type qwen3_omni_moe_audio_encoder + model.safetensors). vpeval never
    downloads. config (a Qwen3OmniMoeAudioEncoderConfig dict) builds random weights, for tests.
    """

    name = "qwen"
    sample_rate = 16000
    frame_rate = 13.0

    class Params(Params):
        weights: str | None = Field(None, description=f"Local folder with {NEEDS}.")
        config: dict[str, Any] | None = Field(
            None, description="A Qwen3OmniMoeAudioEncoderConfig as a dict: builds random weights instead (tests)."
        )
        device: str = Field("cpu", description="torch device to run the encoder on.")

    def _load(self):
        from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import (
            Qwen3OmniMoeAudioEncoderConfig,
            Qwen3OmniMoeConfig,
        )
        from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeAudioEncoder

        if self.params.config is not None:
            model = Qwen3OmniMoeAudioEncoder(Qwen3OmniMoeAudioEncoderConfig(**self.params.config))
        else:
            folder = require_folder(self.name, "weights", self.params.weights, NEEDS)
            model_type = json.loads((folder / "config.json").read_text()).get("model_type")
            if model_type == "qwen3_omni_moe_audio_encoder":
                model = Qwen3OmniMoeAudioEncoder.from_pretrained(str(folder), local_files_only=True)
            elif model_type == "qwen3_omni_moe":
                # Only the audio tower: the 30B thinker and talker stay on disk.
                config = Qwen3OmniMoeConfig.from_pretrained(str(folder), local_files_only=True)
                model = Qwen3OmniMoeAudioEncoder(config.thinker_config.audio_config)
                model.load_state_dict(read_state_dict(folder, TOWER_PREFIX, "Qwen3-Omni audio tower"), strict=True)
            else:
                raise MissingModelError(
                    f"The qwen frontend parameter weights={folder} holds a {model_type} model; "
                    f"point it at a folder with {NEEDS}."
                )
        from transformers import WhisperFeatureExtractor

        self.mel = WhisperFeatureExtractor(feature_size=model.config.num_mel_bins, sampling_rate=self.sample_rate)
        return model.to(self.params.device)

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        import torch

        model = self.model
        mel = self.mel(
            np.asarray(audio, dtype=np.float32), sampling_rate=self.sample_rate, padding="longest", return_tensors="np"
        )["input_features"][0]
        mel = mel[:, : max(1, len(audio) // self.mel.hop_length)]  # the frames that hold audio
        with torch.inference_mode():
            features = torch.from_numpy(np.ascontiguousarray(mel)).to(self.params.device)
            out = model(features, feature_lens=torch.tensor([mel.shape[1]], device=self.params.device))
        return FrontendOutput(self.frame_rate, features=out.last_hidden_state.float().cpu().numpy())
