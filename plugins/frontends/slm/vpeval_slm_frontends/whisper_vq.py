"""GLM-4-Voice's speech tokenizer (Kimi-Audio's semantic tokens) on transformers' Whisper encoder.

A Whisper encoder whose first `pooling_position` layers run at 50 frames/s, then average pooling
by `pooling_kernel_size` (4: 12.5 frames/s) and, after layer `quantize_position`, nearest-codeword
lookup in a `quantize_vocab_size` x d_model codebook. Attention is block-causal in blocks of
`quantize_causal_block_size` frames when the config sets it. Only the layers up to the
quantizer are built: nothing after it affects the tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
import torch.nn.functional as F
from torch import nn

from vpeval.errors import MissingModelError


@dataclass(frozen=True)
class VQSettings:
    """The WhisperVQConfig fields GLM-4-Voice adds to a WhisperConfig."""

    pooling_kernel_size: int | None = 4
    pooling_type: str = "avg"
    pooling_position: int = 16
    quantize_vocab_size: int = 16384
    quantize_position: int = 16
    quantize_causal_block_size: int | None = None
    encoder_causal_attention: bool = False
    encoder_causal_convolution: bool = False

    @classmethod
    def split(cls, config: dict) -> tuple[VQSettings, dict]:
        """(VQ settings, the remaining Whisper fields) of a GLM-4-Voice tokenizer config.json."""
        names = {f.name for f in fields(cls)}
        vq_extra = {
            "quantize_commit_coefficient",
            "quantize_loss_scale",
            "quantize_ema_decay",
            "quantize_restart_interval",
            "quantize_encoder_only",
            "quantize_causal_encoder",
            "skip_language_detection",
        }  # training-only switches, and two that the layers built here already mean (below)
        settings = cls(**{k: v for k, v in config.items() if k in names})
        if config.get("quantize_causal_encoder"):
            # GLM-4-Voice: layers before the quantizer attend causally (is_causal = encoder_causal_attention or
            # quantize_causal_encoder); only those layers are built here, so it is encoder_causal_attention.
            settings = replace(settings, encoder_causal_attention=True)
        whisper = {k: v for k, v in config.items() if k not in names and k not in vq_extra}
        return settings, whisper


def _additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Boolean [B, S, S] (query may see key) -> additive mask [B, 1, S, S]."""
    return ((~allowed).to(dtype) * torch.finfo(dtype).min)[:, None]


class WhisperVQTokenizer(nn.Module):
    """Waveform features in, GLM-4-Voice speech tokens out (12.5 per second with kernel 4)."""

    def __init__(self, whisper_fields: dict, settings: VQSettings):
        from transformers import WhisperConfig
        from transformers.models.whisper.modeling_whisper import WhisperEncoder

        super().__init__()
        if settings.pooling_kernel_size is not None and settings.pooling_position > settings.quantize_position:
            raise MissingModelError(
                "The kimi tokenizer config has pooling_position > quantize_position, which no GLM-4-Voice "
                "tokenizer has; point weights at THUDM/glm-4-voice-tokenizer."
            )
        config = WhisperConfig.from_dict({**whisper_fields, "encoder_layers": settings.quantize_position})
        self.settings = settings
        self.encoder = WhisperEncoder(config)
        self.codebook = nn.Embedding(settings.quantize_vocab_size, config.d_model)

    def _conv(self, conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
        if not self.settings.encoder_causal_convolution:
            return conv(x)
        left = conv.dilation[0] * (conv.kernel_size[0] - 1)  # causal: all padding on the left
        return F.conv1d(F.pad(x, (left, 0)), conv.weight, conv.bias, conv.stride, 0, conv.dilation, conv.groups)

    def _mask(self, valid: torch.Tensor, block: int | None, dtype: torch.dtype) -> torch.Tensor:
        length = valid.shape[1]
        allowed = valid[:, None, :].expand(-1, length, -1)
        if block is not None or self.settings.encoder_causal_attention:
            causal = torch.tril(torch.ones(length, length, dtype=torch.bool, device=valid.device))
            if block is not None:  # within a block every frame sees the whole block
                ids = torch.arange(length, device=valid.device) // block
                causal = causal | (ids[:, None] == ids[None, :])
            allowed = allowed & causal
        return _additive(allowed, dtype)

    def forward(self, mel: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids [B, S] and their validity [B, S] for mel [B, n_mels, T] with frame mask [B, T]."""
        x, valid = self.hidden(mel, valid)
        # Nearest codeword by Euclidean distance, as GLM-4-Voice's vector_quantize.
        book = self.codebook.weight
        distances = (x**2).sum(-1, keepdim=True) - 2 * x @ book.T + (book**2).sum(-1)
        return distances.argmin(-1), valid

    def hidden(self, mel: torch.Tensor, valid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The pooled encoder states the quantizer sees [B, S, d_model] and their validity [B, S]."""
        enc, s = self.encoder, self.settings
        x = F.gelu(self._conv(enc.conv1, mel))
        x = F.gelu(self._conv(enc.conv2, x)).permute(0, 2, 1)
        x = x + enc.embed_positions.weight[: x.shape[1]]
        valid = valid[:, :: enc.conv1.stride[0] * enc.conv2.stride[0]][:, : x.shape[1]]
        block = s.quantize_causal_block_size
        mask = self._mask(valid, block, x.dtype)
        for index, layer in enumerate(enc.layers, start=1):
            x = layer(x, mask)
            if index == s.pooling_position and s.pooling_kernel_size:
                k = s.pooling_kernel_size
                x = x.permute(0, 2, 1)
                if x.shape[-1] % k:
                    x = F.pad(x, (0, k - x.shape[-1] % k))
                x = (F.avg_pool1d if s.pooling_type == "avg" else F.max_pool1d)(x, k).permute(0, 2, 1)
                valid = valid[:, ::k]
                block = None if block is None else block // k
                mask = self._mask(valid, block, x.dtype)
        return x[:, : valid.shape[1]], valid

    @property
    def samples_per_token(self) -> int:
        enc = self.encoder
        return enc.conv1.stride[0] * enc.conv2.stride[0] * (self.settings.pooling_kernel_size or 1) * 160

    def load_glm_state(self, state: dict, folder) -> None:
        """Load a GLM-4-Voice tokenizer state dict (any prefix before conv1.weight)."""
        anchor = next((k for k in state if k.endswith("conv1.weight")), None)
        if anchor is None or not any(k.endswith("codebook.weight") for k in state):
            raise MissingModelError(
                f"The kimi tokenizer folder {folder} has no conv1.weight and codebook.weight tensors; "
                "point weights at THUDM/glm-4-voice-tokenizer."
            )
        prefix = anchor[: -len("conv1.weight")]
        mine = {}
        for key, value in state.items():
            if not key.startswith(prefix):
                continue
            name = key[len(prefix) :]
            if name == "codebook.weight":
                mine[name] = value
            elif name.startswith(("conv1.", "conv2.", "embed_positions.")):
                mine["encoder." + name] = value
            elif name.startswith("layers.") and int(name.split(".")[1]) < self.settings.quantize_position:
                mine["encoder." + name] = value
        missing, _ = self.load_state_dict(mine, strict=False)  # `mine` holds only names the module has
        missing = [k for k in missing if not k.startswith("encoder.layer_norm.")]  # unused: final norm
        if missing:
            raise MissingModelError(
                f"The kimi tokenizer folder {folder} lacks the tensors {', '.join(missing[:3])}; "
                "point weights at THUDM/glm-4-voice-tokenizer."
            )
