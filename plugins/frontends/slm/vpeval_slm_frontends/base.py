"""What the four transformers-backed frontends share: lazy loading, threads, no gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from vpeval.api import Frontend


class TorchFrontend(Frontend):
    """A frozen pretrained frontend: fit() learns nothing, the model loads on first encode()."""

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._model: Any = None

    def _load(self) -> Any:
        """Build the model from params.config (random weights) or params.weights (a local folder)."""
        raise NotImplementedError

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

        return torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32)).to(self.params.device)
