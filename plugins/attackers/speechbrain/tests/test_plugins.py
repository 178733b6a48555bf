"""The speechbrain encoder and attackers: contracts, VPC's enrollment averaging, training by the recipes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpeval.build import validate_params
from vpeval.errors import BadAudioError, ConfigError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval.testing import AttackerContract, EncoderContract
from vpeval.testing.dummies import make_corpus
from vpeval.types import TrainingData, TrainingStage
from vpeval_speechbrain.build import load_folder
from vpeval_speechbrain.embedding import Embedder, vpc_waveform
from vpeval_speechbrain.params import CPU_TEST_TRAINING

HERE = Path(__file__).resolve().parent


def _write(tmp_path: Path) -> Path:
    import importlib.util

    spec = importlib.util.spec_from_file_location("sb_conftest", HERE / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_ecapa_folder(Path(tmp_path) / "model", seed=5)


class _WithFolder:
    params = {"source": "/path/to/exp/asv_orig"}  # validates; make() writes a real folder

    def make(self, tmp_path, seed=None, **overrides):
        cls = self.plugin_class()
        raw = {**self.params, "source": str(_write(tmp_path)), **overrides}
        context = plugin_context(seed=self.seed if seed is None else seed, work_dir=Path(tmp_path) / "work")
        return cls(validate_params(cls, raw), context)


class TestSpeechBrainAttacker(_WithFolder, AttackerContract):
    plugin_name = "speechbrain"


class TestSpeechBrainEncoder(_WithFolder, EncoderContract):
    plugin_name = "speechbrain"


class TestSpeechBrainTrainAttacker(_WithFolder, AttackerContract):
    plugin_name = "speechbrain-train"
    params = {"source": "/path/to/exp/asv_orig", **CPU_TEST_TRAINING}


def _attacker(name, tmp_path, **params):
    cls = get_plugin_manager().get("attacker", name)
    folder = _write(tmp_path)
    return cls(validate_params(cls, {"source": str(folder), **params}), plugin_context(work_dir=tmp_path / "w")), folder


def test_a_side_is_the_mean_of_raw_embeddings_as_vpc_enrolls(tmp_path):
    corpus = make_corpus(tmp_path / "audio", speakers=2, utterances=3, seconds=0.8)
    attacker, folder = _attacker("speechbrain", tmp_path)
    u = corpus.utterances
    sides = attacker.represent_many([u[:3], [u[4]]])
    embedder = Embedder(load_folder(folder), noise_seed=attacker.context.torch_seed("speechbrain", "pooling-noise"))
    alone = np.stack([embedder.embed_batch([vpc_waveform(x.load(16000))])[0] for x in u[:3]])
    np.testing.assert_allclose(sides[0], alone.mean(axis=0), rtol=1e-6, atol=1e-6)  # not length-normalised first
    assert attacker.score(sides[[0]], sides[[0]])[0] == pytest.approx(1.0)


def test_embeddings_are_kept_in_the_content_cache(tmp_path):
    corpus = make_corpus(tmp_path / "audio", speakers=2, utterances=2, seconds=0.6)
    cls = get_plugin_manager().get("encoder", "speechbrain")
    folder = _write(tmp_path)
    params = validate_params(cls, {"source": str(folder)})
    options = {"cache_root": str(tmp_path / "cache")}
    first = cls(params, plugin_context(work_dir=tmp_path / "a", options=options)).embed_corpus(corpus)
    assert len(list((tmp_path / "cache").rglob("*.npy"))) == len(corpus)
    again = cls(params, plugin_context(work_dir=tmp_path / "b", options=options))
    again.folder._embed_one = None  # a second run reads the cache and embeds nothing
    np.testing.assert_array_equal(again.embed_corpus(corpus), first)


def test_silent_audio_is_one_sentence(tmp_path):
    import soundfile

    path = tmp_path / "silent.wav"
    soundfile.write(path, np.zeros(8000, np.float32), 16000)
    from vpeval.types import Utterance

    attacker, _ = _attacker("speechbrain", tmp_path)
    with pytest.raises(BadAudioError, match="silent.wav cannot be used: it is empty or all zeros"):
        attacker.represent_many([[Utterance("s", "a", str(path))]])


def _train(name, tmp_path, corpus, **params):
    attacker, folder = _attacker(name, tmp_path, **{**CPU_TEST_TRAINING, **params})
    attacker.train(TrainingData([TrainingStage("original", corpus)], None, "original"))
    return attacker, folder


def test_fine_tuning_starts_from_the_folder_and_scratch_does_not(tmp_path):
    """vpc2026-track1 fine-tunes the folder's weights; vpc2024 trains its architecture from random weights."""
    import torch

    corpus = make_corpus(tmp_path / "audio", speakers=3, utterances=3, seconds=1.0)
    tuned, folder = _train("speechbrain-train", tmp_path / "t", corpus, recipe="vpc2026-track1", lr=1e-4)
    scratch, _ = _train("speechbrain-train", tmp_path / "s", corpus, recipe="vpc2024")
    source = torch.load(folder / "embedding_model.ckpt", weights_only=True)

    def distance(attacker):
        state = torch.load(attacker._trained / "embedding_model.ckpt", weights_only=True)
        return max(float((state[k].float() - source[k].float()).abs().max()) for k in source if "weight" in k)

    assert distance(tuned) < 0.05 < distance(scratch)
    saved = tmp_path / "saved"
    tuned.save(saved)  # a SpeechBrain folder again: what EncoderClassifier reads
    assert {p.name for p in saved.iterdir()} >= {"hyperparams.yaml", "embedding_model.ckpt"}
    assert load_folder(saved).dim == 16
    curve = tuned.training_curve()  # the report's training curve, also after loading the saved folder
    assert curve and all({"epoch", "loss"} <= set(e) for e in curve)
    reloaded, _ = _attacker("speechbrain-train", tmp_path / "r", recipe="vpc2026-track1")
    reloaded.load(saved)
    assert reloaded.training_curve() == curve


def test_training_refuses_a_network_unlike_the_recipe(tmp_path):
    corpus = make_corpus(tmp_path / "audio", speakers=2, utterances=2, seconds=0.6)
    attacker, folder = _attacker("speechbrain-train", tmp_path, **CPU_TEST_TRAINING)
    path = folder / "hyperparams.yaml"
    path.write_text(path.read_text().replace("attention_channels: 128", "attention_channels: 128\n    dropout: 0.1"))
    with pytest.raises(ConfigError, match="embedding_model dropout=0.1"):
        attacker.train(TrainingData([TrainingStage("original", corpus)], None, "original"))


def test_describe_shows_the_parameters():
    """What `vpeval describe attacker speechbrain` prints (the CLI command is one call of describe_plugin)."""
    from vpeval.describe import describe_plugin

    for kind, name in (("attacker", "speechbrain"), ("attacker", "speechbrain-train"), ("encoder", "speechbrain")):
        out = describe_plugin(kind, name)
        assert "source: str" in out and "batch_size" in out and "trim_zeros" in out and "ssl_model" in out
    out = describe_plugin("attacker", "speechbrain-train")
    assert "recipe" in out and "vpc2026-track1" in out and "needs_training: True" in out


def test_the_cpu_batches_in_process_with_the_cache(tmp_path):
    """A released-layout folder on the CPU runs packed batches in this process (batch_size > 1): the
    vectors of one-by-one embedding (batch_size 1, the run's workers), cached per utterance, under its
    own identity."""
    corpus = make_corpus(tmp_path / "audio", speakers=3, utterances=3, seconds=1.0)
    cls = get_plugin_manager().get("encoder", "speechbrain")
    folder = _write(tmp_path)
    options = {"cache_root": str(tmp_path / "cache")}
    one = validate_params(cls, {"source": str(folder), "batch_size": 1})
    alone = cls(one, plugin_context(work_dir=tmp_path / "a", options=options))
    params = validate_params(cls, {"source": str(folder), "batch_size": 4})
    batched = cls(params, plugin_context(work_dir=tmp_path / "b", options=options))
    assert batched.folder.identity() != alone.folder.identity()  # batch size is part of it there
    assert batched.folder.batches_here and batched.folder.prepare().packs and not alone.folder.batches_here
    one_by_one = alone.embed_corpus(corpus)
    together = batched.embed_corpus(corpus)
    np.testing.assert_allclose(together, one_by_one, rtol=0, atol=1e-5)
    assert len(list((tmp_path / "cache").rglob("*.npy"))) == 2 * len(corpus)
    np.testing.assert_array_equal(batched.embed_corpus(corpus), together)
