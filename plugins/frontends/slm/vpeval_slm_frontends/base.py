"""What the four transformers-backed frontends share: lazy loading on the run's device, no gradients,
and the grouping of waveforms into batches."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from vpeval.api import Frontend


class TorchFrontend(Frontend):
    """A frozen pretrained frontend: fit() learns nothing, the model loads on first encode() onto the run's
    device (`context.device`), and forward passes run under the run's precision (`context.autocast()`)."""

    device_sensitive: ClassVar[bool] = True  # CUDA kernels and bf16/fp16 give numbers of their own
    # Whether zero-padding a waveform at its end leaves the frames of the real audio unchanged (causal
    # models). Otherwise encode_batch batches only waveforms of the same length, exact by construction.
    pads_exactly: ClassVar[bool] = False

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._model: Any = None

    @classmethod
    def missing_paths(cls, params) -> list[str]:
        """The local checkpoint folders the params name exist (`vpeval validate` names each missing one)."""
        return [
            f"the {cls.name} frontend's {field} folder {folder} does not exist; give the local model folder."
            for field in ("weights", "feature_weights")
            if (folder := getattr(params, field, None)) is not None and not Path(folder).is_dir()
        ]

    def _load(self) -> Any:
        """Build the model from params.config (random weights) or params.weights (a local folder)."""
        raise NotImplementedError

    @property
    def device(self) -> str:
        return self.context.device

    @property
    def model(self) -> Any:
        if self._model is None:
            import torch

            self.context.apply_threads()
            torch.manual_seed(self.context.torch_seed(self.name, "init"))  # random-config models are seeded
            self._model = self._load()
            self._model.eval().requires_grad_(False)
        return self._model

    def _tensor(self, audio: np.ndarray):
        import torch

        return torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32)).to(self.device)

    def batches(self, lengths: Sequence[int], exact: bool | None = None) -> list[list[int]]:
        """Indices in batches of at most params.batch_size, sorted by length (little padding per batch);
        exact (default: not pads_exactly): only equal lengths share a batch. Deterministic."""
        exact = not self.pads_exactly if exact is None else exact
        order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
        size = self.params.batch_size
        groups: list[list[int]] = []
        for index in order:
            last = groups[-1] if groups else None
            if last is None or len(last) >= size or (exact and lengths[last[0]] != lengths[index]):
                groups.append([index])
            else:
                last.append(index)
        return groups


def padded(audios: Sequence[np.ndarray], device: str):
    """Waveforms zero-padded at the end into one float32 tensor [B, 1, longest] on `device`."""
    import torch

    longest = max(1, max(len(a) for a in audios))
    batch = np.zeros((len(audios), 1, longest), dtype=np.float32)
    for row, audio in enumerate(audios):
        batch[row, 0, : len(audio)] = audio
    return torch.from_numpy(batch).to(device)
