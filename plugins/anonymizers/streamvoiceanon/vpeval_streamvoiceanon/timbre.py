"""The timbre encoder: Spark-TTS's BiCodec speaker encoder (spark_speaker_encoder.pth), as far as
`tokenize_wav` goes (modules/bicodec_speaker_encoder/speaker_encoder.py):

16 kHz waveform -> torchaudio mel magnitude (128 slaney bands, n_fft 1024, window 640, hop 320, from
10 Hz, power 1, no log) -> ECAPA-TDNN (channels 512, global-context attentive pooling) whose frame-level
latent (relu of the 1536-channel conv over layers 2-4) -> perceiver resampler to 32 latents of 128 dims
-> residual FSQ (levels 4^6, one quantizer, one bound) -> the 32 x 128 quantized timbre latents.

The pooled x-vector (pool / bn / linear) and the d-vector projection (`project`) are built so the
checkpoint loads strictly, but tokenize_wav does not use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from vpeval_streamvoiceanon.codec import ScalarQuantizer


@dataclass
class TimbreConfig:
    """configs/hydra_arcs/sv/sparktts_speaker_encoder.yaml."""

    sample_rate: int = 16000
    n_fft: int = 1024
    win_length: int = 640
    hop_length: int = 320
    f_min: float = 10.0
    n_mels: int = 128
    out_dim: int = 1024
    latent_dim: int = 128
    token_num: int = 32
    fsq_levels: list[int] = field(default_factory=lambda: [4, 4, 4, 4, 4, 4])
    channels: int = 512  # ECAPA_TDNN_GLOB_c512
    perceiver_depth: int = 2
    perceiver_heads: int = 8
    perceiver_dim_head: int = 64


class ConvReluBn(nn.Module):
    def __init__(self, cin: int, cout: int, kernel: int = 1, padding: int = 0):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, kernel, padding=padding)
        self.bn = nn.BatchNorm1d(cout)

    def forward(self, x: Tensor) -> Tensor:
        return self.bn(F.relu(self.conv(x)))


class Res2ConvReluBn(nn.Module):
    """Res2Net split into `scale` parts; all but the last go through conv -> relu -> bn, each adding the previous."""

    def __init__(self, channels: int, kernel: int, padding: int, dilation: int, scale: int):
        super().__init__()
        self.width = channels // scale
        n = scale if scale == 1 else scale - 1
        self.convs = nn.ModuleList(nn.Conv1d(self.width, self.width, kernel, 1, padding, dilation) for _ in range(n))
        self.bns = nn.ModuleList(nn.BatchNorm1d(self.width) for _ in range(n))
        self.scale = scale

    def forward(self, x: Tensor) -> Tensor:
        parts = torch.split(x, self.width, 1)
        out, sp = [], parts[0]
        for i, (conv, bn) in enumerate(zip(self.convs, self.bns, strict=True)):
            sp = bn(F.relu(conv(sp if i == 0 else sp + parts[i])))
            out.append(sp)
        if self.scale != 1:
            out.append(parts[len(self.convs)])
        return torch.cat(out, dim=1)


class SEConnect(nn.Module):
    def __init__(self, channels: int, bottleneck: int = 128):
        super().__init__()
        self.linear1 = nn.Linear(channels, bottleneck)
        self.linear2 = nn.Linear(bottleneck, channels)

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.sigmoid(self.linear2(F.relu(self.linear1(x.mean(dim=2)))))[..., None]


class SERes2Block(nn.Module):
    def __init__(self, channels: int, dilation: int, scale: int = 8):
        super().__init__()
        self.se_res2block = nn.Sequential(
            ConvReluBn(channels, channels),
            Res2ConvReluBn(channels, 3, dilation, dilation, scale),
            ConvReluBn(channels, channels),
            SEConnect(channels),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.se_res2block(x)


class ECAPA(nn.Module):
    """ECAPA_TDNN(global_context_att=True): layer1-4, conv, pool (ASTP), bn, linear."""

    def __init__(self, feat_dim: int, channels: int, embed_dim: int):
        super().__init__()
        self.layer1 = ConvReluBn(feat_dim, channels, 5, 2)
        self.layer2 = SERes2Block(channels, 2)
        self.layer3 = SERes2Block(channels, 3)
        self.layer4 = SERes2Block(channels, 4)
        out = 512 * 3  # fixed in the published module, whatever `channels`
        self.conv = nn.Conv1d(channels * 3, out, 1)
        self.pool = nn.Module()
        self.pool.linear1 = nn.Conv1d(out * 3, 128, 1)
        self.pool.linear2 = nn.Conv1d(128, out, 1)
        self.bn = nn.BatchNorm1d(out * 2)
        self.linear = nn.Linear(out * 2, embed_dim)

    def latent(self, x: Tensor) -> Tensor:
        """features [B, F, T] -> frame-level latent [B, 1536, T]."""
        o1 = self.layer1(x)
        o2 = self.layer2(o1)
        o3 = self.layer3(o2)
        o4 = self.layer4(o3)
        return F.relu(self.conv(torch.cat([o2, o3, o4], dim=1)))


class PerceiverAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dim_head: int):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, heads * dim_head, bias=False)
        self.to_kv = nn.Linear(dim, 2 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim, bias=False)

    def forward(self, latents: Tensor, context: Tensor, mask: Tensor) -> Tensor:
        context = torch.cat([latents, context], dim=1)  # cross_attn_include_queries
        b = latents.shape[0]
        q = self.to_q(latents).view(b, latents.shape[1], self.heads, -1).transpose(1, 2)
        k, v = (t.view(b, context.shape[1], self.heads, -1).transpose(1, 2) for t in self.to_kv(context).chunk(2, -1))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
        return self.to_out(y.transpose(1, 2).reshape(b, latents.shape[1], -1))


class GEGLUFeedForward(nn.Module):
    """Sequential(Linear(dim, 2 inner), GEGLU, Linear(inner, dim)): keys .0 and .2."""

    def __init__(self, dim: int, mult: int = 4):
        super().__init__()
        inner = int(dim * mult * 2 / 3)
        self.add_module("0", nn.Linear(dim, inner * 2))
        self.add_module("2", nn.Linear(inner, dim))

    def forward(self, x: Tensor) -> Tensor:
        x, gate = getattr(self, "0")(x).chunk(2, dim=-1)
        return getattr(self, "2")(F.gelu(gate) * x)


class Perceiver(nn.Module):
    """PerceiverResampler: proj_context, latents, layers [(attention, feed-forward)], norm (RMSNorm gamma)."""

    def __init__(self, c: TimbreConfig, dim_context: int):
        super().__init__()
        dim = c.latent_dim
        self.proj_context = nn.Linear(dim_context, dim) if dim_context != dim else nn.Identity()
        self.latents = nn.Parameter(torch.zeros(c.token_num, dim))
        self.layers = nn.ModuleList(
            nn.ModuleList([PerceiverAttention(dim, c.perceiver_heads, c.perceiver_dim_head), GEGLUFeedForward(dim)])
            for _ in range(c.perceiver_depth)
        )
        self.norm = nn.Module()
        self.norm.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        x = self.proj_context(x)
        latents = self.latents[None].expand(x.shape[0], -1, -1)
        for attention, feed_forward in self.layers:
            latents = attention(latents, x, mask) + latents
            latents = feed_forward(latents) + latents
        return F.normalize(latents, dim=-1) * latents.shape[-1] ** 0.5 * self.norm.gamma


class TimbreEncoder(nn.Module):
    """SpeakerEncoder of bicodec_speaker_encoder: speaker_encoder, perceiver_sampler, quantizer, project,
    mel_transformer (torchaudio's MelSpectrogram, whose window and filters the checkpoint may carry)."""

    def __init__(self, c: TimbreConfig | None = None):
        super().__init__()
        import torchaudio

        c = c or TimbreConfig()
        self.config = c
        self.speaker_encoder = ECAPA(c.n_mels, c.channels, c.out_dim)
        self.perceiver_sampler = Perceiver(c, 512 * 3)
        self.quantizer = ScalarQuantizer(c.latent_dim, c.fsq_levels, double_bound=False)
        self.project = nn.Linear(c.latent_dim * c.token_num, c.out_dim)
        self.mel_transformer = torchaudio.transforms.MelSpectrogram(
            c.sample_rate,
            c.n_fft,
            c.win_length,
            c.hop_length,
            c.f_min,
            None,
            n_mels=c.n_mels,
            power=1.0,
            norm="slaney",
            mel_scale="slaney",
        )

    @torch.no_grad()
    def latents(self, wave: Tensor) -> Tensor:
        """[B, S] at 16 kHz (one length) -> timbre latents [B, token_num, latent_dim]."""
        mel = self.mel_transformer(wave.float())  # [B, n_mels, T]
        features = self.speaker_encoder.latent(mel)
        tokens = self.config.token_num
        valid = wave.shape[-1] // self.config.hop_length + tokens
        mask = torch.arange(features.shape[2] + tokens, device=wave.device)[None] < valid
        x = self.perceiver_sampler(features.transpose(1, 2), mask.expand(wave.shape[0], -1))
        return self.quantizer.quantize(x)


# Deterministic buffers of torchaudio's MelSpectrogram: the published checkpoint may or may not hold them.
OPTIONAL_KEYS = ("mel_transformer.",)
# Derived FSQ buffers (levels, basis, scales, implicit codebook) some versions save.
DERIVED = r"quantizer\.(layers\..*|scales|_levels|_basis|implicit_codebook)$"
