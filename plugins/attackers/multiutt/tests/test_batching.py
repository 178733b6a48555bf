"""Batched inference: padded, length-bucketed ECAPA batches give what one utterance at a time gives.

Tolerance: 1e-5 max abs on frame maps and embeddings (measured 3e-8 to 7e-8, float rounding of other
batch shapes; the full-size 512/1536 network measured the same), because the SE means and the pooling
are masked and every convolution's reflect padding is rebuilt at each row's end.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.api import PluginContext
from vpeval.types import TrainingData, TrainingStage
from vpeval_multiutt.attacker import MultiUttAttacker
from vpeval_multiutt.audio_model import AudioConfig, AudioModel
from vpeval_multiutt.params import CPU_TEST_SIZE
from vpeval_torch.batching import pad_batch

CONFIG = AudioConfig(frame_dim=20, channels=(16, 16, 16, 16, 48), attention_channels=8, embedding_dim=16)
TOLERANCE = 1e-5


def test_padded_frame_maps_and_embeddings_equal_one_at_a_time():
    torch.manual_seed(0)
    model = AudioModel(CONFIG, "mean", heads=4, temperature=0.3).eval()
    rng = np.random.default_rng(0)
    lengths = (23, 311, 64, 140, 139, 398, 400)  # much padding, and rows just shorter than the longest
    frames = [rng.standard_normal((n, CONFIG.frame_dim)).astype(np.float32) for n in lengths]
    with torch.no_grad():
        x, true = pad_batch(frames)
        maps = model.encoder.frame_map_padded(x, true)
        batched = model.encoder.pool_padded(maps, true)
        for row, f in enumerate(frames):
            alone = model.encoder.frame_map(torch.from_numpy(f)[None])[0]
            assert (maps[row, :, : len(f)] - alone).abs().max() < TOLERANCE, lengths[row]
            assert (batched[row] - model.encoder.pool(alone[None])[0]).abs().max() < TOLERANCE
        # without the reflected tails the last frames of short rows would differ: the hook is what makes it exact
        unmasked = model.encoder.frame_map(x)
    assert (unmasked[0, :, : lengths[0]] - maps[0, :, : lengths[0]]).abs().max() > 1e-3


@pytest.fixture(scope="module")
def trained(train_corpus, tmp_path_factory):
    """One epoch of each kind of audio read: utterance embeddings (mean) and frame maps (frame-concat)."""
    out = {}
    for system in ("mean", "frame-concat"):
        params = MultiUttAttacker.Params(**{**CPU_TEST_SIZE, "system": system, "epochs": 1})
        attacker = MultiUttAttacker(params, PluginContext(seed=1, work_dir=tmp_path_factory.mktemp(system)))
        attacker.train(TrainingData([TrainingStage("original", train_corpus.with_speakers(train_corpus.speakers[:4]))]))
        out[system] = attacker
    return out


@pytest.mark.parametrize("system", ["mean", "frame-concat"])
def test_batched_trial_sides_equal_one_utterance_at_a_time(system, trained, heldout, monkeypatch):
    attacker = trained[system]
    u = heldout.utterances
    sides = [u[:3], u[2:6], [u[7]], u[8:12]]
    monkeypatch.setattr(attacker, "params", attacker.params.model_copy(update={"batch_inference": "never"}))
    single = attacker.represent_many(sides)
    batched_params = {"batch_inference": "always", "inference_batch_size": 3}  # several buckets
    monkeypatch.setattr(attacker, "params", attacker.params.model_copy(update=batched_params))
    calls = []
    padded = attacker.audio.encoder.frame_map_padded
    monkeypatch.setattr(attacker.audio.encoder, "frame_map_padded", lambda x, n: calls.append(len(x)) or padded(x, n))
    batched = attacker.represent_many(sides)
    assert sum(calls) == len({x.path for side in sides for x in side}) and max(calls) <= 3
    assert np.abs(batched - single).max() < TOLERANCE


def test_batching_is_on_a_gpu_by_default(trained, monkeypatch):
    attacker = trained["mean"]
    assert attacker.params.batch_inference == "auto" and not attacker.batched  # the CPU: one at a time
    monkeypatch.setattr(type(attacker.context), "on_gpu", property(lambda self: True))
    assert attacker.batched
