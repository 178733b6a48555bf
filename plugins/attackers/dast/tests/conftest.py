"""Tiny corpora and tiny random-weight SSL models (WavLM, Whisper) for the dast tests."""

from __future__ import annotations

import pytest
import torch

from vpeval.testing.dummies import make_corpus

TRAIN_SPEAKERS = 10


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return make_corpus(
        tmp_path_factory.mktemp("dast-audio"), speakers=TRAIN_SPEAKERS + 8, utterances=6, seconds=1.5, seed=0
    )


@pytest.fixture(scope="session")
def train_corpus(corpus):
    return corpus.with_speakers(corpus.speakers[:TRAIN_SPEAKERS])


@pytest.fixture(scope="session")
def heldout(corpus):
    return corpus.with_speakers(corpus.speakers[TRAIN_SPEAKERS:])


@pytest.fixture(scope="session")
def tiny_wavlm(tmp_path_factory):
    """A random-weight WavLM folder: 3 layers of 64, 50 frames/s like WavLM-Large (strides 5 x 8 x 8).
    Random weights carry little speaker information; 128 CNN channels keep enough for the fusion tests."""
    from transformers import WavLMConfig, WavLMModel

    torch.manual_seed(0)
    config = WavLMConfig(
        hidden_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=128,
        conv_dim=(128, 128, 128),
        conv_stride=(5, 8, 8),
        conv_kernel=(10, 8, 8),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        num_buckets=32,
        max_bucket_distance=64,
    )
    folder = tmp_path_factory.mktemp("wavlm")
    WavLMModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_whisper(tmp_path_factory):
    """A random-weight Whisper folder (transformers format): 2 encoder layers of 64."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=100,
        num_mel_bins=80,
        d_model=64,
        encoder_layers=2,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=1500,
        max_target_positions=32,
        decoder_start_token_id=1,
        pad_token_id=0,
        eos_token_id=2,
        bos_token_id=1,
    )
    folder = tmp_path_factory.mktemp("whisper")
    WhisperForConditionalGeneration(config).save_pretrained(folder)
    return folder


TINY = {
    "channels": [16, 16, 16, 16, 48],
    "attention_channels": 8,
    "embedding_dim": 16,
    "stages": ["I"],
    "stage1": {"epochs": 6, "batch_size": 8, "grad_accumulation": 1, "dropout": 0.0},
    "crop_seconds": 1.0,
    "lr": 0.005,
    "time_mask_width": 10,
    "freq_mask_width": 8,
}


@pytest.fixture
def tiny() -> dict:
    return dict(TINY)


@pytest.fixture(scope="session")
def tiny_shared() -> dict:
    return dict(TINY)


@pytest.fixture
def eer_on():
    return heldout_eer


def heldout_eer(attacker, heldout) -> float:
    import numpy as np

    from vpeval.stats import equal_error_rate

    reps = attacker.represent_many([[u] for u in heldout.utterances])
    speakers = np.array([u.speaker for u in heldout.utterances])
    i, j = np.triu_indices(len(speakers), 1)
    scores = attacker.score(reps[i], reps[j])
    same = speakers[i] == speakers[j]
    return equal_error_rate(scores[same], scores[~same])
