"""asv_ssl fine-tuning's data as VPC 2026's train_speaker_embeddings_ssl_ft.py (e6810a4) prepares it: one crop
per whole crop length of each utterance (prepare_libri's chunks), and the YAML's DropFreq + DropChunk."""

from __future__ import annotations

import torch

from vpeval.types import Utterance
from vpeval_speechbrain.ssl_training import _augmenter, _segments


def test_one_crop_per_whole_crop_length_and_short_utterances_dropped_or_repeated():
    durations = [0.4, 1.0, 2.5, 3.99]
    utterances = [
        Utterance(f"u{i}", "s", f"/x/u{i}.wav", sample_rate=16000, duration=d) for i, d in enumerate(durations)
    ]
    assert _segments(utterances, 1.0, drop_short=True) == [1, 2, 2, 3, 3, 3]
    assert _segments(utterances, 1.0, drop_short=False) == [0, 1, 2, 2, 3, 3, 3]


def test_the_yaml_augmentation_changes_every_crop_and_keeps_its_length():
    crops = torch.randn(4, 16000)
    torch.manual_seed(0)
    out, lengths = _augmenter()(crops, torch.ones(4))
    assert out.shape == crops.shape and torch.equal(lengths, torch.ones(4))
    assert all(not torch.equal(a, b) for a, b in zip(out, crops))  # probability 1, both augmentations
    torch.manual_seed(0)
    assert torch.equal(_augmenter()(crops, torch.ones(4))[0], out)  # drawn from torch's generator: seeded
