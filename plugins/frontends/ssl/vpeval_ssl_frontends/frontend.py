"""wavlm, hubert, wav2vec2: a frozen self-supervised speech model's layers as frame features (50 Hz)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, model_validator

from vpeval.api import Frontend, Params
from vpeval.errors import ConfigError
from vpeval.types import FrontendOutput

SAMPLE_RATE = 16000
LayerIndex = Annotated[int, Field(ge=-1000, le=1000)]
LayerWeight = Annotated[float, Field(ge=-1e4, le=1e4, allow_inf_nan=False)]


class SslParams(Params):
    model: str = Field(
        description="Local model: a transformers folder (config.json + model.safetensors or pytorch_model.bin); "
        "for wavlm also the original UniLM checkpoint file WavLM-Large.pt (as VPC 2026 ships it)."
    )
    layers: Literal["all"] | list[LayerIndex] = Field(
        "all",
        description="Which hidden layers: 'all' is every transformer layer 1..L (VPC 2026's stack); or a list of "
        "indices, 0 = the transformer's input (CNN features), i = layer i's output, negative from the end.",
    )
    combine: Literal["stack", "mean", "weighted-sum"] = Field(
        "stack",
        description="stack: features [N, K*D], layer after layer (reshape to [N, K, D]); mean: their average; "
        "weighted-sum: softmax(layer_weights)-weighted sum, as VPC 2026's WeightedLayerSum and SUPERB.",
    )
    layer_weights: list[LayerWeight] | None = Field(
        None, description="One logit per selected layer (softmaxed) for combine: weighted-sum."
    )
    final_layer_norm: bool = Field(
        False,
        description="Layer-norm-first models (Large): the last layer after the encoder's final layer norm "
        "(transformers' last_hidden_state) instead of the layer's own output (UniLM's layer_results, VPC 2026).",
    )
    normalize: Literal["auto", "zero-mean-unit-var", "layer-norm", "none"] = Field(
        "auto",
        description="Input normalisation. auto: as the model says (a folder's preprocessor_config.json "
        "do_normalize, transformers' zero mean unit variance; WavLM-Large.pt's cfg normalize, UniLM's layer norm).",
    )
    batch_size: int = Field(8, ge=1, le=1024, description="Waveforms per padded batch (similar lengths together).")
    max_batch_seconds: float = Field(
        240.0,
        ge=1.0,
        le=36000.0,
        description="Padded audio per batch: it stops growing before waveforms x longest exceeds this.",
    )

    @model_validator(mode="after")
    def _weights_with_weighted_sum(self):
        if (self.combine == "weighted-sum") != (self.layer_weights is not None):
            raise ValueError("layer_weights is needed by, and only by, combine: weighted-sum")
        if isinstance(self.layers, list) and (not self.layers or len(set(self.layers)) != len(self.layers)):
            raise ValueError("layers must be 'all' or a non-empty list of distinct layer indices")
        return self


class SslFrontend(Frontend):
    """The frames of a frozen self-supervised speech model (transformers), every layer available.

    Continuous features only (no tokens), at the model's frame rate (50 Hz: a 320-sample CNN stride at
    16 kHz). With layers: all and combine: stack (the defaults) features[n] holds every transformer
    layer's frame n one after the other: `split_layers(out.features)` gives [K, N, D]. encode_batch runs
    padded, masked batches on the run's device in its precision; its frames equal encode's (README).
    """

    name = ""
    sample_rate = SAMPLE_RATE
    frame_rate = 50.0
    device_sensitive = True
    Params = SslParams

    def __init__(self, params=None, context=None):
        super().__init__(params, context)
        self._loaded: Any = None
        self._indices: list[int] = []

    @classmethod
    def missing_paths(cls, params: SslParams) -> list[str]:
        from vpeval_ssl_frontends.loading import path_problem

        problem = path_problem(cls.name, params.model)
        return [problem] if problem else []

    # -- the model -------------------------------------------------------------------------------------
    @property
    def loaded(self):
        if self._loaded is None:
            from vpeval_ssl_frontends.loading import load

            self.context.apply_threads()
            loaded = load(self.name, self.params.model, self.params.normalize)
            loaded.model.eval().requires_grad_(False).to(self.context.device)
            self._indices = self._resolve_layers(loaded.model.config.num_hidden_layers)
            self.frame_rate = SAMPLE_RATE / float(np.prod(loaded.model.config.conv_stride))
            self._loaded = loaded
        return self._loaded

    def _resolve_layers(self, count: int) -> list[int]:
        if self.params.layers == "all":
            indices = list(range(1, count + 1))
        else:
            bad = [i for i in self.params.layers if not -(count + 1) <= i <= count]
            if bad:
                raise ConfigError(
                    f"{self.name} parameter layers: {bad[0]} is not a layer of {self.params.model} "
                    f"(0 to {count}, or -1 to -{count + 1} from the end)."
                )
            indices = [i % (count + 1) for i in self.params.layers]
            if len(set(indices)) != len(indices):
                raise ConfigError(f"{self.name} parameter layers {self.params.layers} names one layer twice.")
        weights = self.params.layer_weights
        if weights is not None and len(weights) != len(indices):
            raise ConfigError(
                f"{self.name} parameter layer_weights has {len(weights)} weights for {len(indices)} selected layers."
            )
        return indices

    @property
    def output_layers(self) -> list[int]:
        """The layer indices in the features, in order (loads the model)."""
        _ = self.loaded
        return list(self._indices)

    @property
    def layer_dim(self) -> int:
        return int(self.loaded.model.config.hidden_size)

    @property
    def layer_count(self) -> int:
        """How many layers the features hold side by side: K with combine: stack, else 1 (loads the model)."""
        return len(self.output_layers) if self.params.combine == "stack" else 1

    def split_layers(self, features: np.ndarray) -> np.ndarray:
        """[N, K*D] stacked features -> [K, N, D], one slab per output layer."""
        k = len(self.output_layers)
        return np.ascontiguousarray(features.reshape(features.shape[0], k, -1).transpose(1, 0, 2))

    # -- encoding --------------------------------------------------------------------------------------
    def encode(self, audio: np.ndarray) -> FrontendOutput:
        return self.encode_batch([audio])[0]

    def encode_batch(self, audios: Sequence[np.ndarray]) -> list[FrontendOutput]:
        from vpeval_torch.batching import length_buckets

        loaded = self.loaded
        audios = [self._min_length(np.asarray(a, dtype=np.float32).reshape(-1)) for a in audios]
        out: list[FrontendOutput | None] = [None] * len(audios)
        max_samples = int(self.params.max_batch_seconds * SAMPLE_RATE)
        for batch in length_buckets([len(a) for a in audios], self.params.batch_size, max_samples):
            frames = self._frames([audios[i] for i in batch], loaded)
            for i, f in zip(batch, frames):
                out[i] = FrontendOutput(self.frame_rate, features=f)
        return out  # type: ignore[return-value]

    def _min_length(self, audio: np.ndarray) -> np.ndarray:
        """At least one frame's receptive field (400 samples, 25 ms): shorter audio is zero-padded."""
        need = self._receptive_field()
        return audio if len(audio) >= need else np.pad(audio, (0, need - len(audio)))

    def _receptive_field(self) -> int:
        config = self.loaded.model.config
        field, jump = 1, 1
        for kernel, stride in zip(config.conv_kernel, config.conv_stride):
            field += (kernel - 1) * jump
            jump *= stride
        return field

    def _frames(self, audios: list[np.ndarray], loaded) -> list[np.ndarray]:
        import torch

        from vpeval_ssl_frontends.forward import frame_lengths, layer_frames, normalize
        from vpeval_torch.batching import pad_batch

        model = loaded.model
        with torch.inference_mode():
            waves, lengths = pad_batch(audios, device=self.context.device)
            waves = normalize(waves.float(), lengths, loaded.normalize)
            with self.context.autocast():
                layers = layer_frames(model, waves, lengths, self._indices)
                picked = [layers[i] for i in self._indices]
                if self.params.final_layer_norm and model.config.do_stable_layer_norm:
                    last = model.config.num_hidden_layers
                    picked = [model.encoder.layer_norm(x) if i == last else x for i, x in zip(self._indices, picked)]
            picked = [x.float() for x in picked]
            if self.params.combine == "stack":
                combined = torch.cat(picked, dim=-1)
            elif self.params.combine == "mean":
                combined = torch.stack(picked).mean(0)
            else:
                weights = torch.softmax(torch.tensor(self.params.layer_weights, device=waves.device), 0)
                combined = (torch.stack(picked) * weights[:, None, None, None]).sum(0)
            counts = frame_lengths(model, lengths).tolist()
            return [combined[b, :n].cpu().numpy().astype(np.float32) for b, n in enumerate(counts)]


class WavLMFrontend(SslFrontend):
    """WavLM (Chen et al. 2022) frames, every layer: a transformers folder or UniLM's WavLM-Large.pt.

    VPC 2026's asv_ssl reads all 24 transformer layers of WavLM-Large.pt (layers: all, combine: stack)
    and learns their weighted sum in its ECAPA; DAST's SSL stream and multiutt's frame source can name it.
    """

    name = "wavlm"


class HubertFrontend(SslFrontend):
    """HuBERT (Hsu et al. 2021) frames, every layer, from a local transformers folder."""

    name = "hubert"


class Wav2Vec2Frontend(SslFrontend):
    """wav2vec 2.0 (Baevski et al. 2020) frames, every layer, from a local transformers folder."""

    name = "wav2vec2"
