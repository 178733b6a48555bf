"""A minimal, independent speaker scorer for anonymizer tests: mean MFCC vectors and cosine trials.

It checks that an anonymizer moves voices away from their speakers without trusting any attacker
plugin: O-O EER of every cross-utterance pair against O-A EER with the test side anonymized.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vpeval.stats import equal_error_rate


def mfcc_mean(audio: np.ndarray, rate: int, n_mels: int = 40, n_ceps: int = 20) -> np.ndarray:
    """Mean MFCC 1..n_ceps-1 of mono audio (numpy STFT, triangular mel bank, log, DCT-II)."""
    from scipy.fft import dct

    n_fft, hop = 512, rate // 100
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(audio, n_fft // 2), n_fft)[::hop]
    power = np.abs(np.fft.rfft(frames * np.hanning(n_fft), axis=1)) ** 2

    def mel(f):
        return 2595 * np.log10(1 + f / 700)

    edges = 700 * (10 ** (np.linspace(0, mel(rate / 2), n_mels + 2) / 2595) - 1)
    bins = np.fft.rfftfreq(n_fft, 1 / rate)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    bank = np.maximum(0, np.minimum((bins - lo) / (mid - lo), (hi - bins) / (hi - mid)))
    ceps = dct(np.log(power @ bank.T + 1e-10), type=2, norm="ortho", axis=1)[:, 1:n_ceps]
    return ceps.mean(axis=0)


def cosine_trial_eer(enroll: dict, test: dict, speaker: dict) -> float:
    """EER of cosine scores over every (enroll, test) pair of different utterance ids."""

    def unit(v):
        return v / np.linalg.norm(v)

    target, nontarget = [], []
    for i, e in enroll.items():
        for j, t in test.items():
            if i != j:
                (target if speaker[i] == speaker[j] else nontarget).append(float(unit(e) @ unit(t)))
    return equal_error_rate(np.array(target), np.array(nontarget))


def mfcc_eers(anonymize: Callable[[np.ndarray, int, str], np.ndarray], utterances) -> tuple[float, float]:
    """(O-O, O-A) EER of the MFCC scorer; anonymize(audio, rate, utterance id) gives the test side."""
    import soundfile as sf

    speaker = {u.id: u.speaker for u in utterances}
    original, anonymized = {}, {}
    for u in utterances:
        audio, rate = sf.read(u.path, dtype="float32")
        original[u.id] = mfcc_mean(audio, rate)
        anonymized[u.id] = mfcc_mean(anonymize(audio, rate, u.id), rate)
    return cosine_trial_eer(original, original, speaker), cosine_trial_eer(original, anonymized, speaker)
