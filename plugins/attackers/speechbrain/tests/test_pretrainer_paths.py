"""hyperparams.yaml's Pretrainer `paths:` entry names the checkpoint each module loads, as SpeechBrain's
Pretrainer reads it (and vpeval's ASR and emotion readers): not the folder's own `<module>.ckpt` beside it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vpeval.build import validate_params
from vpeval.errors import MissingModelError
from vpeval.plugins import get_plugin_manager, plugin_context
from vpeval_speechbrain.build import load_folder
from vpeval_speechbrain.embedding import Embedder
from vpeval_speechbrain.tiny import write_ecapa_folder


def _with_paths(tmp_path: Path, entry: str, top: str = "") -> Path:
    """A folder whose own embedding_model.ckpt (seed 3) is not the one its `paths:` entry names."""
    folder = write_ecapa_folder(tmp_path / "asv_orig", seed=3)
    text = (folder / "hyperparams.yaml").read_text()
    (folder / "hyperparams.yaml").write_text(top + text + f"    paths:\n        embedding_model: {entry}\n")
    return folder


def _named(tmp_path: Path) -> Path:
    """The weights the entry names: another random network of the same shape (seed 5)."""
    return write_ecapa_folder(tmp_path / "named", seed=5) / "embedding_model.ckpt"


def _embed(model, wave: np.ndarray) -> np.ndarray:
    return Embedder(model).embed_batch([wave])[0]


def test_the_named_checkpoint_is_loaded_as_speechbrain_loads_it(tmp_path, reference, audio):
    named = _named(tmp_path)
    folder = _with_paths(tmp_path, str(named))
    wave = audio(1.1, 2)
    ref = reference(folder, tmp_path / "savedir")  # SpeechBrain's own EncoderClassifier reads paths:
    with torch.no_grad():
        theirs = ref.encode_batch(torch.from_numpy(wave)).squeeze().numpy()
    mine = _embed(load_folder(folder), wave)
    np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-5)
    own = _embed(load_folder(folder, own_checkpoints=True), wave)  # the folder's own embedding_model.ckpt
    assert np.abs(own - mine).max() > 1e-2


def test_a_relative_entry_with_a_reference_is_read_in_the_folder(tmp_path, audio):
    named = _named(tmp_path)
    folder = _with_paths(tmp_path, "!ref <pretrained_path>/speaker.ckpt", top="pretrained_path: weights\n")
    (folder / "weights").mkdir()
    (folder / "weights" / "speaker.ckpt").write_bytes(named.read_bytes())
    wave = audio(0.9, 1)
    model = load_folder(folder)
    np.testing.assert_array_equal(_embed(model, wave), _embed(load_folder(named.parent), wave))
    assert folder / "weights" / "speaker.ckpt" in model.files  # what the cache identity hashes
    assert folder / "embedding_model.ckpt" not in model.files


def test_an_entry_naming_nothing_that_exists_is_refused_naming_it(tmp_path):
    folder = _with_paths(tmp_path, "/nowhere/speaker.ckpt")
    (folder / "embedding_model.ckpt").unlink()
    with pytest.raises(MissingModelError) as err:
        load_folder(folder)
    assert "/nowhere/speaker.ckpt" in str(err.value) and "embedding_model" in str(err.value)


def test_the_attacker_scores_with_the_named_checkpoint(tmp_path, audio):
    named = _named(tmp_path)
    folder = _with_paths(tmp_path, str(named))
    cls = get_plugin_manager().get("attacker", "speechbrain")
    plain = write_ecapa_folder(tmp_path / "plain", seed=3)  # the folder's own weights, without paths:

    def attacker(source: Path):
        params = validate_params(cls, {"source": str(source)})
        return cls(params, plugin_context(work_dir=tmp_path / "w" / source.name))

    waves = [audio(1.0, 7)]
    with_paths, without = attacker(folder), attacker(plain)
    vector = with_paths.folder.embed_audio(waves)[0]
    expected = _embed(load_folder(named.parent), with_paths.folder.waveform(waves[0]))
    np.testing.assert_allclose(vector, expected, rtol=0, atol=1e-6)  # packed (the attacker's) vs padded
    assert np.abs(vector - without.folder.embed_audio(waves)[0]).max() > 1e-2
    before = with_paths.folder.identity()
    write_ecapa_folder(tmp_path / "named", seed=7)  # other weights under the named path; the folder unchanged
    assert attacker(folder).folder.identity() != before  # the cache keys the weights read, not the folder's own


def test_fine_tuning_starts_from_the_named_weights_and_the_trained_folder_reads_its_own(tmp_path):
    """vpc2026-track1 fine-tunes the weights `paths:` names (SpeechBrain's pretrained model); the trained
    folder drops the entry, so it, not the source's weights, is what vpeval and SpeechBrain then read."""
    from vpeval.testing.dummies import make_corpus
    from vpeval.types import TrainingData, TrainingStage
    from vpeval_speechbrain.params import CPU_TEST_TRAINING

    named = _named(tmp_path)
    folder = _with_paths(tmp_path, str(named))
    cls = get_plugin_manager().get("attacker", "speechbrain-train")
    raw = {**CPU_TEST_TRAINING, "source": str(folder), "recipe": "vpc2026-track1", "lr": 1e-4}
    attacker = cls(validate_params(cls, raw), plugin_context(work_dir=tmp_path / "w"))
    corpus = make_corpus(tmp_path / "audio", speakers=3, utterances=3, seconds=1.0)
    attacker.train(TrainingData([TrainingStage("original", corpus)], None, "original"))
    trained = attacker._trained
    state = torch.load(trained / "embedding_model.ckpt", weights_only=True)

    def distance(path: Path) -> float:
        start = torch.load(path, weights_only=True)
        return max(float((state[k].float() - start[k].float()).abs().max()) for k in start if "weight" in k)

    assert distance(named) < 0.05 < distance(folder / "embedding_model.ckpt")
    assert "paths:" not in (trained / "hyperparams.yaml").read_text()
    assert load_folder(trained).files[1] == trained / "embedding_model.ckpt"


def test_only_the_paths_block_is_taken_out(tmp_path):
    from vpeval_speechbrain.hparams import HyperParams
    from vpeval_speechbrain.pretrainer import pretrainer_paths, text_without_paths

    folder = _with_paths(tmp_path, "/elsewhere/speaker.ckpt")
    path = folder / "hyperparams.yaml"
    path.write_text(path.read_text() + "\n# trailing comment\nafter: 3\n")
    stripped = text_without_paths(HyperParams.read(path))
    assert stripped == path.read_text().replace("    paths:\n        embedding_model: /elsewhere/speaker.ckpt\n", "")
    path.write_text(stripped)
    kept = HyperParams.read(path)
    assert pretrainer_paths(kept) == {} and kept.values["after"] == 3 and "loadables" in kept.values["pretrainer"].value
    assert text_without_paths(kept) is None  # nothing to take out: the file is copied as it is


def test_validate_finds_the_named_weights(tmp_path):
    named = _named(tmp_path)
    folder = _with_paths(tmp_path, str(named))
    (folder / "embedding_model.ckpt").unlink()  # the folder's weights are only where paths: says
    cls = get_plugin_manager().get("attacker", "speechbrain")
    assert cls.missing_paths(cls.Params(source=str(folder))) == []
    named.unlink()
    assert ["has no embedding_model.ckpt" in s for s in cls.missing_paths(cls.Params(source=str(folder)))] == [True]
