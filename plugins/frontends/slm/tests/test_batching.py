"""encode_batch equals encode for every transformers frontend, on waveforms of unequal lengths.

Mimi (causal) and Qwen (one packed call with per-utterance attention windows) batch utterances of any
length; Kimi pads log-mels and masks them; Higgs batches only equal lengths. Every test mixes lengths,
includes two of the same length, and uses batch_size 2 so that some batches hold several waveforms.
Tokens must be identical; features within 1e-5 (max abs; matrix products over a different batch shape
may round differently in the last bits).
"""

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval_slm_frontends.higgs import HiggsFrontend
from vpeval_slm_frontends.kimi import KimiFrontend
from vpeval_slm_frontends.mimi import MimiFrontend
from vpeval_slm_frontends.qwen import QwenFrontend
from vpeval_slm_frontends.tiny import HIGGS, KIMI_TOKENIZER, KIMI_WHISPER, MIMI, QWEN

FRONTENDS = {
    "mimi": (MimiFrontend, {"config": MIMI}),
    "higgs": (HiggsFrontend, {"config": HIGGS}),
    "kimi": (KimiFrontend, {"config": KIMI_TOKENIZER, "feature_config": KIMI_WHISPER}),
    "qwen": (QwenFrontend, {"config": QWEN}),
}
FEATURE_TOLERANCE = 1e-5


def waveforms(sample_rate: int) -> list[np.ndarray]:
    from vpeval.testing.dummies import speaker_voice, synthesize

    seconds = [0.8, 0.45, 1.2, 0.8, 0.6]
    return [synthesize(speaker_voice(k), s, sample_rate, np.random.default_rng(k)) for k, s in enumerate(seconds)]


@pytest.mark.parametrize("name", sorted(FRONTENDS))
def test_encode_batch_equals_encode(name):
    cls, params = FRONTENDS[name]
    frontend = cls(cls.Params(**params, batch_size=2), PluginContext(seed=0))
    audios = waveforms(frontend.sample_rate)[: 4 if name == "higgs" else None]  # higgs is the slow one
    batched = frontend.encode_batch(audios)
    assert len(batched) == len(audios)
    for audio, out in zip(audios, batched):
        alone = frontend.encode(audio)
        assert out.frame_rate == alone.frame_rate and out.codebook_sizes == alone.codebook_sizes
        if alone.tokens is None:
            assert out.tokens is None
        else:
            np.testing.assert_array_equal(out.tokens, alone.tokens)
        if alone.features is None:
            assert out.features is None
        else:
            assert out.features.shape == alone.features.shape
            assert np.abs(out.features - alone.features).max() <= FEATURE_TOLERANCE


@pytest.mark.parametrize("name", ["mimi", "higgs", "qwen"])
def test_frames_is_the_count_encode_emits(name):
    cls, params = FRONTENDS[name]
    frontend = cls(cls.Params(**params), PluginContext(seed=0))
    for audio in waveforms(frontend.sample_rate):
        out = frontend.encode(audio)
        emitted = len(out.tokens) if out.tokens is not None else len(out.features)
        assert frontend.frames(len(audio)) == emitted


def test_batches_group_only_equal_lengths_when_padding_is_not_exact():
    frontend = HiggsFrontend(HiggsFrontend.Params(config=HIGGS, batch_size=2), PluginContext(seed=0))
    assert frontend.batches([5, 3, 5, 5, 3]) == [[1, 4], [0, 2], [3]]
    assert frontend.batches([5, 3, 5, 4], exact=False) == [[1, 3], [0, 2]]


def test_the_model_runs_on_the_context_device():
    frontend = MimiFrontend(MimiFrontend.Params(config=MIMI), PluginContext(seed=0, device="cpu"))
    assert frontend.device_sensitive and next(frontend.model.parameters()).device.type == "cpu"
