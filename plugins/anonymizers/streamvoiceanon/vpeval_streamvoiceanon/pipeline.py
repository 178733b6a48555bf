"""The conversion pipeline of evaluations/infer_arvc.py, from speaker vectors on:

source (44.1 kHz) -> content tokens; reference (44.1 kHz) -> content tokens + codec codes (the prompt,
cut to max_prompt_frames); speaker vectors mixed with noise (alpha); dual AR -> codec codes -> decoder
-> waveform. The speaker vectors (CAM++ style vector, Spark-TTS timbre latents) come from the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from vpeval_streamvoiceanon.codec import CodecConfig, FireflyCodec
from vpeval_streamvoiceanon.content import UNUSED_PREFIXES, ContentConfig, ContentEncoder
from vpeval_streamvoiceanon.layout import (
    CODEC_CONFIG,
    CODEC_FILE,
    CONTENT_CONFIG,
    CONTENT_FILE,
    LM_CONFIG,
    LM_FILE,
    TIMBRE_CONFIG,
    TIMBRE_FILE,
    fold_weight_norm,
    load_into,
    read_config,
    read_state,
)
from vpeval_streamvoiceanon.lm import ARVC, LMConfig, Sampler
from vpeval_streamvoiceanon.timbre import DERIVED, OPTIONAL_KEYS, TimbreConfig, TimbreEncoder

# Buffers of the published FSQ layers (levels, basis, scales): derived from the config, not weights.
_FSQ_BUFFERS = r"quantizer\.residual_fsq\.rvqs\.\d+\.(layers\..*|scales)$"


def noise_mixing(x: Tensor, alpha: float, generator: torch.Generator) -> Tensor:
    """alpha x + (1 - alpha) noise, noise ~ N(mean(x), std(x)) over the whole tensor (apply_noise_mixing)."""
    noise = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype) * x.std() + x.mean()
    return alpha * x + (1 - alpha) * noise


@dataclass
class Settings:
    delay: int = 2
    alpha: float = 1.0
    max_prompt_frames: int = 256
    buffer_frames: int = 32
    temperature: float = 0.7
    top_p: float = 0.7


class Pipeline:
    """The three torch parts of the published model, loaded from the folder, on one device."""

    def __init__(self, lm: ARVC, content: ContentEncoder, codec: FireflyCodec, device: str = "cpu"):
        self.lm, self.content, self.codec, self.device = lm, content, codec, device
        for part in (lm, content, codec):
            part.eval().requires_grad_(False).to(device)
        if content.config.sample_rate != codec.config.sample_rate:
            raise ValueError("content encoder and codec sample rates differ")
        self.sample_rate = codec.config.sample_rate
        self.samples_per_frame = codec.samples_per_frame

    @classmethod
    def load(cls, model_dir: str, config_dir: str | None = None, device: str = "cpu") -> Pipeline:
        import re

        folder = Path(model_dir).expanduser()
        lm = ARVC(read_config(config_dir, LM_CONFIG, LMConfig()))
        load_into(lm, read_state(folder / LM_FILE, unwrap="net"), folder / LM_FILE)
        content = ContentEncoder(read_config(config_dir, CONTENT_CONFIG, ContentConfig()))
        load_into(
            content,
            read_state(folder / CONTENT_FILE, unwrap="net"),
            folder / CONTENT_FILE,
            ignore=UNUSED_PREFIXES,
            optional=("quantizer.pre_module.freqs_cis", "quantizer.pre_module.causal_mask", "quantizer.residual_bsq"),
        )
        codec = FireflyCodec(read_config(config_dir, CODEC_CONFIG, CodecConfig()))
        state = fold_weight_norm(read_state(folder / CODEC_FILE))
        state = {k: v for k, v in state.items() if not re.match(_FSQ_BUFFERS, k)}
        load_into(codec, state, folder / CODEC_FILE)
        return cls(lm, content, codec, device)

    @torch.no_grad()
    def convert(
        self,
        source: Tensor,
        reference: Tensor,
        style: Tensor,
        timbre: Tensor,
        settings: Settings,
        generator: torch.Generator,
        autocast=None,
    ) -> Tensor:
        """source [S], reference [R] at sample_rate; style [style_dim]; timbre [tokens, context_dim] -> [S]."""
        import contextlib

        dev = self.device
        source, reference = source.to(dev, torch.float32)[None], reference.to(dev, torch.float32)[None]
        style = noise_mixing(style.to(dev, torch.float32)[None], settings.alpha, generator)
        timbre = noise_mixing(timbre.to(dev, torch.float32)[None], settings.alpha, generator)
        src_tokens = self.content.encode(source)
        if src_tokens.shape[1] == 0:
            raise ValueError(f"the source is shorter than one frame ({self.samples_per_frame} samples)")
        reference = reference[:, : settings.max_prompt_frames * self.samples_per_frame]
        ref_tokens = self.content.encode(reference)
        ref_codes = self.codec.encode(reference)
        with autocast() if autocast is not None else contextlib.nullcontext():
            codes = self.lm.generate(
                ref_tokens,
                ref_codes,
                src_tokens,
                timbre,
                style,
                settings.delay,
                Sampler(generator, settings.temperature, settings.top_p),
                settings.buffer_frames,
            )
        wave = self.codec.decode(codes)[0].float()
        out = torch.zeros(source.shape[1], device=wave.device)
        n = min(out.shape[0], wave.shape[0])
        out[:n] = wave[:n]
        return out


def load_timbre(model_dir: str, config_dir: str | None = None, device: str = "cpu") -> TimbreEncoder:
    """The Spark-TTS timbre encoder of the folder, in eval mode on `device`."""
    import re

    path = Path(model_dir).expanduser() / TIMBRE_FILE
    encoder = TimbreEncoder(read_config(config_dir, TIMBRE_CONFIG, TimbreConfig()))
    state = {k: v for k, v in read_state(path).items() if not re.match(DERIVED, k)}
    load_into(encoder, state, path, optional=OPTIONAL_KEYS)
    return encoder.eval().requires_grad_(False).to(device)
