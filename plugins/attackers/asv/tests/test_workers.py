"""vpeval's own ECAPA embeds the same bits with one worker and with two (issue 39, item 3): the run's cores
embed whole packed buckets side by side at the run's torch thread count (vpeval_torch.threads) instead of
splitting each forward pass into more torch threads, whose sums change with the thread count."""

from __future__ import annotations

import numpy as np
import soundfile as sf
import torch

from vpeval.plugins import plugin_context
from vpeval.types import Utterance
from vpeval_asv.embedding import Embedder
from vpeval_asv.models import ModelConfig, build_embedding_model


def test_embeddings_are_the_same_bits_with_one_and_two_workers(tmp_path):
    config = ModelConfig("ecapa", 80, (128, 128, 128, 128, 384), 192)  # the demo's widths
    torch.manual_seed(0)
    model = build_embedding_model(config)
    rng = np.random.default_rng(0)
    utterances = []
    for i in range(30):
        seconds = 2.0 + i % 5
        path = tmp_path / f"u{i}.wav"
        sf.write(path, (0.1 * rng.standard_normal(int(seconds * 16000))).astype(np.float32), 16000)
        utterances.append(Utterance(f"u{i}", f"s{i % 3}", str(path), duration=seconds))
    vectors = {}
    for workers in (1, 2):
        embedder = Embedder(config, model, batch_frames=3000)
        assert len(embedder.buckets([int(u.duration * 16000) for u in utterances])) > 2
        context = plugin_context(seed=0, work_dir=tmp_path / f"w{workers}", workers=workers)
        vectors[workers] = embedder.embed_utterances(utterances, context=context)
    assert vectors[1].shape == (30, 192) and np.isfinite(vectors[1]).all()
    assert np.array_equal(vectors[1], vectors[2])
