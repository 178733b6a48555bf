"""The published architecture (no config_dir) builds and converts: shapes of every part agree at full size."""

from __future__ import annotations

import pytest
import torch

from vpeval_streamvoiceanon.codec import FireflyCodec
from vpeval_streamvoiceanon.content import ContentEncoder
from vpeval_streamvoiceanon.lm import ARVC
from vpeval_streamvoiceanon.pipeline import Pipeline, Settings
from vpeval_streamvoiceanon.timbre import TimbreEncoder


@pytest.mark.slow
def test_full_size_random_model_converts_half_a_second():
    torch.manual_seed(0)
    pipeline = Pipeline(ARVC(), ContentEncoder(), FireflyCodec())
    assert pipeline.sample_rate == 44100 and pipeline.samples_per_frame == 2048
    timbre = TimbreEncoder().eval().latents(torch.randn(1, 32000) * 0.1)[0]
    assert timbre.shape == (32, 128)
    source = torch.randn(22050) * 0.1
    out = pipeline.convert(
        source, torch.randn(44100) * 0.1, torch.randn(192), timbre, Settings(), torch.Generator().manual_seed(0)
    )
    assert out.shape == source.shape and torch.isfinite(out).all()
