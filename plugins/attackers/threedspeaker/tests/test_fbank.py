"""The front end: Kaldi fbank as the published recipes compute it, checked against torchaudio's reference and
against Kaldi's algorithm written out here (so a torchaudio that changed a default would fail)."""

from __future__ import annotations

import numpy as np
import pytest
from threedspeaker_testing import published_fbank, voice

from vpeval_3dspeaker.features import fbank, frame_count


def kaldi_fbank(wave: np.ndarray, bins: int, window: str) -> np.ndarray:
    """Kaldi's compute-fbank-feats (snip edges, DC removed, pre-emphasis 0.97, 512-point power spectrum, mel
    triangles from 20 Hz to Nyquist, log floored at float32 epsilon), then minus the mean over frames."""
    frames = 1 + (len(wave) - 400) // 160
    x = np.stack([wave[i * 160 : i * 160 + 400] for i in range(frames)]).astype(np.float64)
    x -= x.mean(axis=1, keepdims=True)
    x = x - 0.97 * np.concatenate([x[:, :1], x[:, :-1]], axis=1)
    n = np.arange(400)
    hann = 0.5 - 0.5 * np.cos(2 * np.pi * n / 399)
    x *= hann**0.85 if window == "povey" else 0.54 - 0.46 * np.cos(2 * np.pi * n / 399)
    power = np.abs(np.fft.rfft(x, n=512)) ** 2  # [frames, 257]
    mel = lambda f: 1127.0 * np.log(1.0 + f / 700.0)  # noqa: E731
    low, high = mel(20.0), mel(8000.0)
    delta = (high - low) / (bins + 1)
    freqs = mel(np.arange(256) * 16000 / 512)
    banks = np.zeros((bins, 257))
    for b in range(bins):
        left, centre, right = low + b * delta, low + (b + 1) * delta, low + (b + 2) * delta
        banks[b, :256] = np.maximum(
            0.0, np.minimum((freqs - left) / (centre - left), (right - freqs) / (right - centre))
        )
    feats = np.log(np.maximum(power @ banks.T, np.finfo(np.float32).eps))
    return feats - feats.mean(axis=0, keepdims=True)


@pytest.mark.parametrize("layout", ["3dspeaker", "wespeaker"])
def test_fbank_equals_the_published_front_end(layout):
    audio = voice(1.23, speaker=1)
    ours = fbank(audio, 80, layout).numpy()
    assert ours.shape == (frame_count(len(audio)), 80) == (1 + (len(audio) - 400) // 160, 80)
    np.testing.assert_array_equal(ours, published_fbank(audio, layout, 80).numpy())
    np.testing.assert_allclose(ours.mean(axis=0), 0.0, atol=1e-4)  # mean-normalised over time


@pytest.mark.parametrize(
    ("layout", "window", "scale"), [("3dspeaker", "povey", 1.0), ("wespeaker", "hamming", 32768.0)]
)
def test_fbank_is_kaldis_algorithm(layout, window, scale):
    audio = voice(0.8, speaker=3)
    ours = fbank(audio, 80, layout).numpy()
    np.testing.assert_allclose(ours, kaldi_fbank(audio.astype(np.float64) * scale, 80, window), atol=2e-3)


def test_the_layouts_front_ends_differ():
    """povey against hamming: a WeSpeaker network fed 3D-Speaker's features would be fed other numbers."""
    audio = voice(0.8)
    assert np.abs(fbank(audio, 80, "3dspeaker").numpy() - fbank(audio, 80, "wespeaker").numpy()).max() > 0.05


def test_frame_count_is_kaldis_snip_edges():
    assert [frame_count(n) for n in (399, 400, 559, 560, 16000)] == [0, 1, 1, 2, 98]
