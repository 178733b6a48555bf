"""The published recipes' front end: Kaldi fbank, 25 ms windows every 10 ms, no dither, minus its mean over time.

3D-Speaker (speakerlab/process/processor.py FBank with mean_nor=True, as infer_sv.py calls it):
torchaudio.compliance.kaldi.fbank of the float waveform with its defaults (povey window, no energy).
WeSpeaker (wespeaker/bin/infer_onnx.py compute_fbank, dataset/processor.py): the waveform times 2 ** 15
(int16 scale), a hamming window, use_energy False. Both subtract each utterance's mean over frames.
"""

from __future__ import annotations

import numpy as np
import torch

SAMPLE_RATE = 16000
FRAME_SAMPLES = 400  # 25 ms at 16 kHz
HOP_SAMPLES = 160  # 10 ms

# layout -> (window_type, waveform scale)
FRONT_ENDS = {"3dspeaker": ("povey", 1.0), "wespeaker": ("hamming", float(1 << 15))}


def frame_count(samples: int) -> int:
    """Kaldi's snip_edges framing: 1 + (samples - 400) // 160, 0 below one window."""
    return 0 if samples < FRAME_SAMPLES else 1 + (samples - FRAME_SAMPLES) // HOP_SAMPLES


def fbank(wave: np.ndarray, num_mel_bins: int, layout: str, device: str = "cpu") -> torch.Tensor:
    """[frames, num_mel_bins] float32 log-mel of one 16 kHz waveform, mean-normalised over time."""
    import torchaudio.compliance.kaldi as kaldi

    window, scale = FRONT_ENDS[layout]
    x = torch.from_numpy(np.ascontiguousarray(wave, dtype=np.float32)).to(device).unsqueeze(0) * scale
    feats = kaldi.fbank(
        x,
        num_mel_bins=num_mel_bins,
        frame_length=25.0,
        frame_shift=10.0,
        dither=0.0,
        sample_frequency=SAMPLE_RATE,
        window_type=window,
        use_energy=False,
    )
    return feats - feats.mean(dim=0, keepdim=True)
