"""The content encoder: StreamVoiceAnon's causal speech tokenizer (asr_s2s_bsq_8192_causal_down_whisper.pth).

encode only (as evaluations/infer_arvc.py uses it): log-mel (44.1 kHz, hop 512) -> ConvNeXt backbone ->
4x causal downsampling -> a causal window-limited transformer (the quantizer's pre_module, window 512
frames) -> binary spherical quantization with 13 bits = 8192 content tokens at 21.5 Hz. The
checkpoint's `head` and `quantizer.post_module` serve training (reconstruction towards w2v-BERT
features) and are not built; their keys are accepted and set aside.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from vpeval_streamvoiceanon.blocks import (
    ConvNeXtEncoder,
    LogMel,
    RMSNorm,
    SwiGLU,
    apply_rotary,
    downsampler,
    rotary_table,
)


@dataclass
class ContentConfig:
    """configs/hydra_arcs/speech_tokenizers/causal-encoder-lfq-8192.yaml (the parts encode uses)."""

    sample_rate: int = 44100
    n_mels: int = 160
    n_fft: int = 2048
    hop_length: int = 512
    win_length: int = 2048
    backbone_depths: list[int] = field(default_factory=lambda: [3, 3, 9, 3])
    backbone_dims: list[int] = field(default_factory=lambda: [128, 256, 384, 512])
    backbone_kernel: int = 7
    quantizer_input_dim: int = 512
    codebook_size: int = 8192
    downsample_factor: list[int] = field(default_factory=lambda: [2, 2])
    window_size: int = 512
    block_size: int = 2048
    n_layer: int = 8
    n_head: int = 8
    dim: int = 512
    intermediate_size: int = 1536
    head_dim: int = 64
    rope_base: float = 10000.0
    norm_eps: float = 1e-5


class WindowAttention(nn.Module):
    def __init__(self, c: ContentConfig):
        super().__init__()
        self.n_head, self.head_dim = c.n_head, c.head_dim
        self.wqkv = nn.Linear(c.dim, 3 * c.n_head * c.head_dim, bias=False)
        self.wo = nn.Linear(c.n_head * c.head_dim, c.dim, bias=False)

    def forward(self, x: Tensor, table: Tensor, mask: Tensor) -> Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(x).view(b, t, 3, self.n_head, self.head_dim).unbind(2)
        q, k = apply_rotary(q, table), apply_rotary(k, table)
        y = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class LayerScale(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), 1e-2))

    def forward(self, x: Tensor) -> Tensor:
        return x * self.gamma


class WindowBlock(nn.Module):
    def __init__(self, c: ContentConfig):
        super().__init__()
        self.attention = WindowAttention(c)
        self.feed_forward = SwiGLU(c.dim, c.intermediate_size)
        self.attention_norm = RMSNorm(c.dim, c.norm_eps)
        self.ffn_norm = RMSNorm(c.dim, c.norm_eps)
        self.attention_layer_scale = LayerScale(c.dim)
        self.ffn_layer_scale = LayerScale(c.dim)

    def forward(self, x: Tensor, table: Tensor, mask: Tensor) -> Tensor:
        h = x + self.attention_layer_scale(self.attention(self.attention_norm(x), table, mask))
        return h + self.ffn_layer_scale(self.feed_forward(self.ffn_norm(h)))


class WindowTransformer(nn.Module):
    """WindowLimitedTransformer(causal=True): frame t attends to frames t - window + 1 .. t."""

    def __init__(self, c: ContentConfig):
        super().__init__()
        self.window = c.window_size
        self.layers = nn.ModuleList(WindowBlock(c) for _ in range(c.n_layer))
        self.norm = RMSNorm(c.dim, c.norm_eps)
        # Persistent in the published module, so the checkpoint carries them (same values).
        self.register_buffer("freqs_cis", rotary_table(c.block_size, c.head_dim, c.rope_base).to(torch.bfloat16))
        self.register_buffer("causal_mask", torch.tril(torch.ones(c.block_size, c.block_size, dtype=torch.bool)))

    def forward(self, x: Tensor) -> Tensor:
        """[B, C, T] -> [B, C, T]."""
        t = x.shape[-1]
        if t > self.freqs_cis.shape[0]:
            raise ValueError(f"content encoder: {t} frames exceed its {self.freqs_cis.shape[0]}-frame rotary table")
        rows = torch.arange(t, device=x.device)
        mask = (rows[None, :] <= rows[:, None]) & (rows[None, :] > rows[:, None] - self.window)
        table = self.freqs_cis[:t].float()
        h = x.transpose(1, 2)
        for layer in self.layers:
            h = layer(h, table, mask[None, None])
        return self.norm(h).transpose(1, 2)


class BinarySphericalQuantizer(nn.Module):
    """One LFQ group with spherical codes: project to log2(codebook) dims; each dim's sign is one bit (MSB first)."""

    def __init__(self, dim: int, codebook_size: int):
        super().__init__()
        bits = int(math.log2(codebook_size))
        if 2**bits != codebook_size:
            raise ValueError(f"content codebook_size {codebook_size} is not a power of two")
        self.project_in = nn.Linear(dim, bits)
        self.project_out = nn.Linear(bits, dim)
        self.register_buffer("mask", 2 ** torch.arange(bits - 1, -1, -1))

    def encode(self, x: Tensor) -> Tensor:
        """[B, T, dim] -> [B, T] indices (l2 normalisation keeps signs, so the bits are the projection's signs)."""
        z = self.project_in(x.float())
        return ((z > 0).long() * self.mask).sum(-1)


class ContentEncoder(nn.Module):
    """FireflyArchitecture (firefly_encoder.py) as far as encode goes: spec_transform, backbone, quantizer."""

    def __init__(self, c: ContentConfig | None = None):
        super().__init__()
        c = c or ContentConfig()
        self.config = c
        self.spec_transform = LogMel(c.sample_rate, c.n_fft, c.win_length, c.hop_length, c.n_mels)
        self.backbone = ConvNeXtEncoder(c.n_mels, c.backbone_depths, c.backbone_dims, c.backbone_kernel)
        self.quantizer = nn.Module()
        self.quantizer.downsample = downsampler(c.quantizer_input_dim, c.downsample_factor)
        self.quantizer.pre_module = WindowTransformer(c)
        self.quantizer.residual_bsq = nn.Module()
        self.quantizer.residual_bsq.rvqs = nn.ModuleList(
            [BinarySphericalQuantizer(c.quantizer_input_dim, c.codebook_size)]
        )

    @torch.no_grad()
    def encode(self, wave: Tensor) -> Tensor:
        """[B, S] at sample_rate -> content tokens [B, S // (hop x factor)]."""
        z = self.backbone(self.spec_transform(wave))
        z = self.quantizer.pre_module(self.quantizer.downsample(z))
        return self.quantizer.residual_bsq.rvqs[0].encode(z.transpose(1, 2))


# Key prefixes of the published checkpoint that encode does not use.
UNUSED_PREFIXES = ("head.", "quantizer.post_module.")
