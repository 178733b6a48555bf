"""qwen: Qwen3-Omni's audio encoder (the thinker's audio tower) through transformers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field

from vpeval.api import Params
from vpeval.errors import MissingModelError
from vpeval.types import FrontendOutput
from vpeval_slm_frontends.base import TorchFrontend
from vpeval_slm_frontends.weights import read_state_dict, require_folder

TOWER_PREFIX = "thinker.audio_tower."
HOP = 160  # Whisper log-mel hop at 16 kHz: 100 frames/s
WINDOW_MEL_FRAMES = 100  # the encoder's convolution window: n_window * 2 = 1 s of mel frames
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
    the encoder emits 13 frames, so frame_rate is 13 and N = 13 * whole seconds + the tail's frames
    (`frames(samples)`; transformers' implementation of the released checkpoint windows 2 * n_window
    = 100 mel frames). vpeval keeps 13, not the paper's nominal 12.5: a slice of S seconds then holds
    the frames a crop of S seconds gives, so durations compare equal audio across frontends.

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
        batch_size: int = Field(16, ge=1, le=4096, description="Waveforms per encode_batch batch (run's device).")

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
        return model.to(self.device)

    def _mel(self, audio: np.ndarray) -> np.ndarray:
        """128-band log-mel [n_mels, T] of the frames that hold audio (T = samples // hop)."""
        mel = self.mel(
            np.asarray(audio, dtype=np.float32), sampling_rate=self.sample_rate, padding="longest", return_tensors="np"
        )["input_features"][0]
        return mel[:, : max(1, len(audio) // self.mel.hop_length)]

    def frames(self, samples: int) -> int:
        """Frames the encoder emits for `samples` samples (13 per whole 1 s window, then the tail's)."""
        return encoder_frames(max(1, samples // HOP), 2 * self.model.n_window)

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        return self.encode_batch([audio])[0]

    def encode_batch(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        """The encoder takes many utterances at once as one concatenated mel with their lengths, and its
        attention is block-diagonal per utterance's windows (cu_seqlens): no padding enters any utterance's
        frames. Batches of params.batch_size, split back by each utterance's frame count."""
        import torch

        model = self.model
        mels = [self._mel(audio) for audio in audios]
        out: list[FrontendOutput | None] = [None] * len(mels)
        for group in self.batches([m.shape[1] for m in mels], exact=False):
            joined = np.ascontiguousarray(np.concatenate([mels[i] for i in group], axis=1))
            lengths = torch.tensor([mels[i].shape[1] for i in group], device=self.device)
            with torch.inference_mode(), self.context.autocast():
                hidden = model(torch.from_numpy(joined).to(self.device), feature_lens=lengths).last_hidden_state
            hidden = hidden.float().cpu().numpy()
            counts = [encoder_frames(mels[i].shape[1], 2 * model.n_window) for i in group]
            if sum(counts) != len(hidden):
                raise RuntimeError(f"qwen: the encoder emitted {len(hidden)} frames, expected {sum(counts)}.")
            for index, part in zip(group, np.split(hidden, np.cumsum(counts)[:-1])):
                out[index] = FrontendOutput(self.frame_rate, features=part)
        return out  # type: ignore[return-value]


def encoder_frames(mel_frames: int, window: int = WINDOW_MEL_FRAMES) -> int:
    """Frames from `mel_frames` log-mel frames: whole windows of 100 give 13 each (three stride-2, kernel-3,
    padding-1 convolutions: 100 -> 50 -> 25 -> 13); the tail window goes through the same arithmetic."""

    def conv(n: int) -> int:
        for _ in range(3):
            n = (n - 1) // 2 + 1
        return n

    whole, tail = divmod(mel_frames, window)
    return whole * conv(window) + (conv(tail) if tail else 0)
