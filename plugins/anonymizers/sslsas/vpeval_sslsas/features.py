"""The generator's input as the release assembles it (dataset_test.py, models_test.py `gen_vpc`).

- audio: 16 kHz, peak-normalised to 0.95 (librosa.util.normalize * 0.95), cut to a whole number of
  320-sample content frames;
- F0: YAAPT (amfm_decompy's pYAAPT) on the audio padded with 10 ms of zeros at each end, frame_length
  20 ms, frame_space 10 ms, nccf_thresh1 0.25, tda_frame_length 25 ms; `samp_values` (Hz, 0 where
  unvoiced, no interpolation); on a YAAPT failure zeros, one per 160 samples;
- content: soft HuBERT logits [T, 200]; speaker: the (anonymized) 192-d vector;
- each of content and speaker normalised over all its values (F.layer_norm(x, x.shape): zero mean,
  unit variance, no affine, one utterance), the content padded by one frame (the last repeated: the
  CNN gives n - 1 frames for 320 n samples), then brought to the F0 frames (2 n) by repeating each frame
  (`_upsample`: an exact integer ratio, else refused), the speaker vector repeated over every frame;
- frames = [content; F0; speaker] along channels: [1, 200 + 1 + 192, frames] at 100 Hz.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
import torch.nn.functional as F

SAMPLE_RATE = 16000
CONTENT_HOP = 320  # samples per HuBERT frame (50 Hz)
F0_HOP = 160  # samples per YAAPT frame (frame_space 10 ms)
PEAK = 0.95
YAAPT_SETTINGS = {"frame_length": 20.0, "frame_space": 10.0, "nccf_thresh1": 0.25, "tda_frame_length": 25.0}


def prepare_audio(audio: np.ndarray) -> np.ndarray:
    """16 kHz audio as the release feeds it: peak 0.95, cut to whole 320-sample frames (float32)."""
    audio = np.asarray(audio, dtype=np.float64)
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak > 0:
        audio = audio / peak * PEAK
    frames = len(audio) // CONTENT_HOP
    return audio[: frames * CONTENT_HOP].astype(np.float32)


def yaapt_f0(audio: np.ndarray, rate: int = SAMPLE_RATE) -> np.ndarray:
    """F0 in Hz per 10 ms frame (0: unvoiced), the release's get_yaapt_f0 without interpolation."""
    import amfm_decompy.basic_tools as basic
    import amfm_decompy.pYAAPT as pYAAPT

    to_pad = int(YAAPT_SETTINGS["frame_length"] / 1000 * rate) // 2
    padded = np.pad(np.asarray(audio, dtype=np.float64), (to_pad, to_pad), "constant", constant_values=0)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # pYAAPT warns on silent stretches (0 / 0 energies)
            pitch = pYAAPT.yaapt(basic.SignalObj(padded, rate), **YAAPT_SETTINGS)
        return np.asarray(pitch.samp_values, dtype=np.float32)
    except Exception:  # the release's bare `except`: YAAPT fails on silence and very short input
        return np.zeros(len(audio) // F0_HOP, dtype=np.float32)


def instance_norm(x: torch.Tensor) -> torch.Tensor:
    """F.layer_norm(x, x.shape): every value of one utterance's tensor to zero mean, unit variance."""
    return F.layer_norm(x, x.shape)


def upsample(signal: torch.Tensor, frames: int) -> torch.Tensor:
    """The release's `_upsample`: [B, C, T] -> [B, C, frames], each frame repeated frames // T times; the
    ratio must be exact (the release's view() fails otherwise)."""
    if signal.dim() == 2:
        signal = signal.unsqueeze(2)
    bsz, channels, length = signal.shape
    if frames % length:
        raise ValueError(f"cannot repeat {length} frames into {frames}: not an integer ratio")
    return signal.unsqueeze(3).repeat(1, 1, 1, frames // length).reshape(bsz, channels, frames)


def generator_input(content: torch.Tensor, f0: torch.Tensor, speaker: torch.Tensor) -> torch.Tensor:
    """[1, units + 1 + dim, frames] from content logits [1, T, units], F0 [1, 1, F] and a speaker vector
    [dim], in the order and with the normalisation of the release's gen_vpc."""
    x = instance_norm(content).transpose(2, 1)
    xv = instance_norm(speaker.reshape(1, 1, -1)).transpose(2, 1)  # [1, dim, 1]
    x = F.pad(x, (0, 1), mode="replicate")  # the CNN's frame count is one short of samples / 320
    if x.shape[-1] < f0.shape[-1]:
        x = upsample(x, f0.shape[-1])
    else:
        f0 = upsample(f0, x.shape[-1])
    x = torch.cat([x, f0.to(x.dtype)], dim=1)
    return torch.cat([x, upsample(xv.to(x.dtype), x.shape[-1])], dim=1)
