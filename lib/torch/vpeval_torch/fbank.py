"""Log-mel filterbanks with sentence-level mean normalisation, as the VoicePrivacy ASV recipes use.

Shared by the asv, dast and multiutt attackers (plugins must not import each other).
"""

from __future__ import annotations

import torch


class FbankFeatures(torch.nn.Module):
    """Waveforms [B, samples] -> mean-normalised log-mel frames [B, frames, n_mels].

    speechbrain's Fbank (25 ms windows, 10 ms hop, log-mel with an 80 dB floor per sentence), then the
    per-sentence mean is subtracted: speechbrain's InputNormalization(norm_type="sentence",
    std_norm=False) on unpadded inputs, which is all the plugins ever give it.
    """

    def __init__(self, n_mels: int, sample_rate: int = 16000):
        super().__init__()
        from speechbrain.lobes.features import Fbank

        self.fbank = Fbank(n_mels=n_mels, sample_rate=sample_rate)

    def forward(self, waves: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            feats = self.fbank(waves)
            return feats - feats.mean(dim=1, keepdim=True)
