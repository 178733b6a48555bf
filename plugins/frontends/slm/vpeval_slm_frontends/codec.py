"""What the two transformers residual-VQ codecs (mimi, higgs) share: loading from a weights folder or a
random config, the loaded config checked against the frontend, and codes turned into tokens [N, Q]."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from vpeval.errors import ConfigError, MissingModelError
from vpeval.types import FrontendOutput
from vpeval_slm_frontends.base import TorchFrontend, padded
from vpeval_slm_frontends.weights import require_folder


class CodecFrontend(TorchFrontend):
    """A frozen transformers codec: audio at sample_rate to tokens [N, Q], no continuous features.

    A subclass names its checkpoint and its config's sample-rate field, gives its transformers classes
    and how it asks the model for num_codebooks codes; frame_rate comes from the loaded config.
    """

    checkpoint: ClassVar[str]  # the Hugging Face checkpoint a weights folder holds (named in messages)
    rate_field: ClassVar[str] = "sampling_rate"  # the transformers config attribute holding its sample rate
    part: ClassVar[str] = "model"  # what the messages call the loaded network

    def _classes(self) -> tuple[type, type]:
        """(model class, config class) from transformers, imported on first use."""
        raise NotImplementedError

    def _codes(self, model: Any, audio: Any) -> Any:
        """audio_codes [1, Q, N] of audio [1, 1, samples], Q = the num_codebooks asked for."""
        raise NotImplementedError

    def _load(self):
        model_class, config_class = self._classes()
        if self.params.config is not None:
            model = model_class(config_class(**self.params.config))
        else:
            needs = f"config.json and model.safetensors of {self.checkpoint}"
            folder = require_folder(self.name, "weights", self.params.weights, needs)
            model = model_class.from_pretrained(str(folder), local_files_only=True)
        config = model.config
        rate = getattr(config, self.rate_field)
        if rate != self.sample_rate:
            raise MissingModelError(
                f"The {self.name} weights run at {rate} Hz but the {self.name} frontend expects {self.sample_rate} Hz; "
                f"point weights at a {self.checkpoint} checkpoint."
            )
        wanted = self.params.num_codebooks
        if wanted is not None and wanted > config.num_quantizers:
            raise ConfigError(
                f"{self.name} parameter num_codebooks={wanted} exceeds the {config.num_quantizers} "
                f"codebooks of the loaded {self.part}; lower it."
            )
        self.frame_rate = float(config.frame_rate)
        return model.to(self.device)

    def frames(self, samples: int) -> int:
        """Frames the codec emits for `samples` samples: it pads the last frame to a whole hop."""
        return max(1, math.ceil(samples * self.frame_rate / self.sample_rate - 1e-9))

    def _output(self, codes: np.ndarray) -> FrontendOutput:
        tokens = np.ascontiguousarray(codes.T, dtype=np.int64)  # [Q, N] -> [N, Q]
        return FrontendOutput(self.frame_rate, tokens, (int(self.model.config.codebook_size),) * tokens.shape[1])

    def encode(self, audio: np.ndarray) -> FrontendOutput:
        import torch

        model = self.model
        with torch.inference_mode(), self.context.autocast():
            codes = self._codes(model, self._tensor(audio)[None, None])
        return self._output(codes[0].cpu().numpy())

    def encode_batch(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        """Batches of params.batch_size waveforms zero-padded at the end (pads_exactly: causal codecs) or of
        equal length; each row's codes cut to the frames of its own length. Equal to encode() (tests)."""
        import torch

        audios = [np.asarray(a, dtype=np.float32) for a in audios]
        model = self.model
        out: list[FrontendOutput | None] = [None] * len(audios)
        for group in self.batches([len(a) for a in audios]):
            with torch.inference_mode(), self.context.autocast():
                codes = self._codes(model, padded([audios[i] for i in group], self.device)).cpu().numpy()
            for row, index in enumerate(group):
                out[index] = self._output(codes[row, :, : self.frames(len(audios[index]))])
        return out  # type: ignore[return-value]
