"""The generator input as the release assembles it: normalisation, frame alignment, YAAPT F0."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval_sslsas.features import generator_input, instance_norm, prepare_audio, upsample, yaapt_f0


def test_instance_norm_is_over_the_whole_utterance():
    x = torch.randn(1, 13, 8) * 3 + 5
    y = instance_norm(x)
    assert abs(float(y.mean())) < 1e-5
    assert abs(float(y.var(unbiased=False)) - 1) < 1e-3
    # one mean for all channels, not one per channel (that would be per-channel instance norm)
    expected = (x - x.mean()) / torch.sqrt(x.var(unbiased=False) + 1e-5)
    torch.testing.assert_close(y, expected)


def test_generator_input_layout_and_alignment():
    torch.manual_seed(0)
    T, units, dim = 6, 8, 192
    content = torch.randn(1, T, units) * 2 + 1
    f0 = torch.rand(1, 1, 2 * (T + 1)) * 200
    z = torch.randn(dim) * 4 + 3
    x = generator_input(content, f0, z)
    assert x.shape == (1, units + 1 + dim, 2 * (T + 1))
    normed = ((content - content.mean()) / torch.sqrt(content.var(unbiased=False) + 1e-5))[0].T  # [units, T]
    for frame in range(T):  # each 50 Hz content frame covers two 100 Hz F0 frames
        torch.testing.assert_close(x[0, :units, 2 * frame], normed[:, frame])
        torch.testing.assert_close(x[0, :units, 2 * frame + 1], normed[:, frame])
    # the padded frame repeats the last content frame
    torch.testing.assert_close(x[0, :units, 2 * T], normed[:, T - 1])
    torch.testing.assert_close(x[0, :units, 2 * T + 1], normed[:, T - 1])
    torch.testing.assert_close(x[0, units], f0[0, 0])  # raw Hz, not normalised
    z_normed = (z - z.mean()) / torch.sqrt(z.var(unbiased=False) + 1e-5)
    for frame in (0, 2 * T + 1):
        torch.testing.assert_close(x[0, units + 1 :, frame], z_normed)
    # the vector's scale does not reach the generator
    torch.testing.assert_close(generator_input(content, f0, 10 * z), x)


def test_longer_content_takes_f0_to_its_frames():
    x = generator_input(torch.randn(1, 5, 4), torch.arange(3.0).reshape(1, 1, 3), torch.randn(6))
    assert x.shape == (1, 11, 6)
    assert x[0, 4].tolist() == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0]


def test_upsample_needs_an_integer_ratio():
    with pytest.raises(ValueError, match="integer ratio"):
        upsample(torch.randn(1, 2, 4), 10)


@pytest.mark.parametrize("n", [2, 9, 40])
def test_yaapt_gives_two_frames_per_content_frame(n):
    rng = np.random.default_rng(n)
    audio = prepare_audio(rng.normal(size=320 * n + 123))
    assert len(audio) == 320 * n
    assert len(yaapt_f0(audio)) == 2 * n


def test_yaapt_finds_the_pitch_of_a_pulse_train():
    from scipy.signal import lfilter

    rate = 16000
    pulses = np.zeros(rate)
    pulses[:: rate // 125] = 1.0
    vowel = lfilter([1.0], [1.0, -1.8 * np.cos(2 * np.pi * 700 / rate), 0.81], pulses)
    f0 = yaapt_f0(prepare_audio(vowel))
    voiced = f0[f0 > 0]
    assert len(voiced) > 0.8 * len(f0)
    assert abs(float(np.median(voiced)) - 125) < 5


def test_silence_gives_unvoiced_frames():
    f0 = yaapt_f0(np.zeros(3200, dtype=np.float32))
    assert f0.shape == (20,) and not f0.any()


def test_prepare_audio_peak():
    audio = prepare_audio(np.array([0.1, -0.5, 0.2] * 400))
    assert len(audio) == 960 and abs(float(np.max(np.abs(audio))) - 0.95) < 1e-6
