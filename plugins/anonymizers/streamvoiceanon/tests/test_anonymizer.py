"""The anonymizer end to end on the tiny published-layout folder: target drawn from the pool's long
utterances, deterministic per voice, input length and rate kept.

The CAM++ style vector is vpeval's campplus encoder (another distribution, with its own tests); here
`style_vector` is replaced by a stand-in of the tiny model's width computed from the reference, so the
rest of the anonymizer runs as it does for real.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vpeval.api import Voice
from vpeval.plugins import plugin_context
from vpeval.testing.dummies import make_corpus
from vpeval_streamvoiceanon.anonymizer import StreamVoiceAnon
from vpeval_streamvoiceanon.layout import TIMBRE_FILE
from vpeval_streamvoiceanon.pipeline import load_timbre


def stand_in_style(self, reference_16k: np.ndarray) -> np.ndarray:
    """Six band energies of the reference (the tiny model's style_dim), so different targets differ."""
    bands = np.array_split(np.abs(np.fft.rfft(reference_16k)), 6)
    return np.log1p(np.array([b.mean() for b in bands], dtype=np.float32))


@pytest.fixture(scope="module")
def pool_manifest(tmp_path_factory):
    import csv

    folder = tmp_path_factory.mktemp("pool")
    long = make_corpus(folder / "long", speakers=3, utterances=2, sample_rate=16000, seconds=0.6, seed=3, name="p")
    short = make_corpus(folder / "short", speakers=2, utterances=1, sample_rate=16000, seconds=0.3, seed=4, name="q")
    manifest = folder / "pool.csv"
    with open(manifest, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["path", "speaker"])
        for u in long.utterances:
            writer.writerow([u.path, "long-" + u.speaker])
        for u in short.utterances:
            writer.writerow([u.path, "short-" + u.speaker])
    return str(manifest)


@pytest.fixture(scope="module")
def anonymizer(tiny, pool_manifest, tmp_path_factory):
    models, configs = tiny
    params = StreamVoiceAnon.Params.model_validate(
        {
            "model_dir": str(models),
            "config_dir": str(configs),
            "pool": {"use": "manifest", "params": {"path": pool_manifest}},
            "min_target_seconds": 0.5,
            "max_prompt_frames": 20,
        }
    )
    made = StreamVoiceAnon(params, plugin_context(seed=0, work_dir=tmp_path_factory.mktemp("work")))
    made.style_vector = stand_in_style.__get__(made)
    made.prepare()
    return made


def source(seconds: float = 0.5, rate: int = 22050) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * (150 + 400 * t) * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)


def test_only_long_pool_utterances_are_targets(anonymizer):
    targets = anonymizer._targets
    assert all(s.startswith("long-") for s in targets.speakers) and len(targets.speakers) == 3


def test_output_keeps_length_and_rate_and_is_deterministic_per_voice(anonymizer):
    audio = source()
    first = anonymizer.anonymize(audio, 22050, Voice("u1", "utterance", np.random.default_rng(11)))
    again = anonymizer.anonymize(audio, 22050, Voice("u1", "utterance", np.random.default_rng(11)))
    other = anonymizer.anonymize(audio, 22050, Voice("u2", "utterance", np.random.default_rng(12)))
    assert first.dtype == np.float32 and first.shape == audio.shape and np.isfinite(first).all()
    assert np.abs(first).max() > 0 and not np.allclose(first, audio)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_timbre_latents_are_quantized_and_depend_on_the_reference(tiny):
    models, configs = tiny
    encoder = load_timbre(str(models), str(configs))
    g = torch.Generator().manual_seed(0)
    a = encoder.latents(torch.randn(1, 16000, generator=g) * 0.1)  # quantized: near inputs may share codes
    b = encoder.latents(torch.randn(1, 16000, generator=g) * 0.01 + torch.sin(torch.arange(16000) / 40.0)[None])
    assert a.shape == (1, 32, 4) and not torch.allclose(a, b)
    # FSQ: every latent is project_out of a level vector in {-2, -1, 0, 1} / 2 (levels 4, one bound)
    q = encoder.quantizer
    levels = (torch.cartesian_prod(*[torch.arange(4)] * 3).float() - 2) / 2
    grid = q.project_out(levels)
    distance = (a[0][:, None, :] - grid[None]).abs().amax(dim=-1).min(dim=1).values
    assert float(distance.max()) < 1e-5
    assert set(torch.load(models / TIMBRE_FILE, weights_only=True)) == set(encoder.state_dict())
