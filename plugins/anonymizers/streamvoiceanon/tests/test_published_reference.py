"""Outputs equal those of the PUBLISHED modules (Plachtaa/StreamVoiceAnon at dd63725, with
vector-quantize-pytorch 1.14.24) run on the same tiny folder: tests/data/published_tiny.json, made by
the script in tests/data/README.md. The LM codes were drawn greedily (the published sampler with its
multinomial draw replaced by argmax; here top_p and temperature near zero keep only the argmax)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from vpeval_streamvoiceanon.lm import Sampler
from vpeval_streamvoiceanon.pipeline import load_timbre

REFERENCE = json.loads((Path(__file__).parent / "data" / "published_tiny.json").read_text())


def inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.sin(torch.cumsum(torch.rand(3200, generator=g) * 0.8, 0))[None] * 0.5
    x = x + 0.05 * torch.randn(1, 3200, generator=g)
    w = torch.randn(1, 16000, generator=g) * 0.2
    return x, w


def test_content_tokens_equal_the_published(pipeline):
    x, _ = inputs()
    assert pipeline.content.encode(x)[0].tolist() == REFERENCE["content_tokens"]


def test_codec_codes_and_waveform_equal_the_published(pipeline):
    x, _ = inputs()
    codes = pipeline.codec.encode(x)
    assert codes[0].tolist() == REFERENCE["codec_codes"]
    wave = pipeline.codec.decode(codes)[0]
    torch.testing.assert_close(wave[:256], torch.tensor(REFERENCE["decoded_first_256"]), rtol=1e-4, atol=1e-6)
    assert float(wave.abs().sum()) == pytest.approx(REFERENCE["decoded_abs_sum"], rel=1e-5)


def test_timbre_latents_equal_the_published(tiny):
    models, configs = tiny
    _, w = inputs()
    latents = load_timbre(str(models), str(configs)).latents(w)[0]
    torch.testing.assert_close(latents, torch.tensor(REFERENCE["timbre_latents"]), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("delay", [0, 2])
def test_greedy_conversion_codes_equal_the_published(pipeline, tiny, delay):
    models, configs = tiny
    x, w = inputs()
    tokens = pipeline.content.encode(x)
    codes = pipeline.codec.encode(x)
    latents = load_timbre(str(models), str(configs)).latents(w)[:, :5]
    style = torch.tensor(REFERENCE["style"])[None]
    greedy = Sampler(torch.Generator().manual_seed(0), temperature=1e-6, top_p=1e-6)
    out = pipeline.lm.generate(tokens[:, :6], codes[:, :, :6], tokens[:, 6:], latents, style, delay, greedy)
    assert out[0].tolist() == REFERENCE["lm_argmax_codes"][str(delay)]
