"""A model folder is data: its YAML never runs, its checkpoints never unpickle objects, its faults are sentences."""

from __future__ import annotations

import pickle

import pytest
import torch

from vpeval.errors import MissingModelError
from vpeval_speechbrain.build import load_folder
from vpeval_speechbrain.hparams import HyperParams


def _replace(folder, old: str, new: str) -> None:
    path = folder / "hyperparams.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_apply_and_new_tags_outside_the_modules_never_run(ecapa_folder, tmp_path):
    marker = tmp_path / "ran"
    _replace(
        ecapa_folder,
        "__set_seed: !apply:torch.manual_seed [!ref <seed>]",
        f"__set_seed: !apply:os.system ['touch {marker}']\n"
        f"popen: !new:subprocess.Popen {{args: ['touch', '{marker}']}}\n"
        f"module: !module:os\ncall: !name:os.system ['touch {marker}']",
    )
    model = load_folder(ecapa_folder)  # the records are kept as data; nothing reads them
    assert model.architecture == "ecapa"
    assert not marker.exists()


def test_a_module_naming_another_class_is_refused_with_file_and_line(ecapa_folder, tmp_path):
    marker = tmp_path / "ran"
    _replace(
        ecapa_folder,
        "embedding_model: !new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN",
        f"embedding_model: !new:subprocess.Popen\n    args: ['touch', '{marker}']\nunused:",
    )
    with pytest.raises(MissingModelError) as caught:
        load_folder(ecapa_folder)
    message = str(caught.value)
    lines = (ecapa_folder / "hyperparams.yaml").read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if "Popen" in t)
    assert f"hyperparams.yaml, line {line}" in message and "!new:subprocess.Popen" in message
    assert "!new:speechbrain.lobes.models.ECAPA_TDNN.ECAPA_TDNN" in message  # what is supported
    assert not marker.exists()


def test_an_activation_naming_a_function_is_refused(ecapa_folder, tmp_path):
    marker = tmp_path / "ran"
    bad = f"    attention_channels: 128\n    activation: !apply:os.system ['touch {marker}']"
    _replace(ecapa_folder, "    attention_channels: 128", bad)
    with pytest.raises(MissingModelError, match=r"activation` is !apply:os.system, which vpeval never runs"):
        load_folder(ecapa_folder)
    assert not marker.exists()


def test_an_unknown_argument_names_its_line_and_the_supported_ones(ecapa_folder):
    _replace(ecapa_folder, "    attention_channels: 128", "    attention_channels: 128\n    hidden_layers: 4")
    line = 1 + next(
        i for i, t in enumerate((ecapa_folder / "hyperparams.yaml").read_text().splitlines()) if "hidden_layers" in t
    )
    with pytest.raises(MissingModelError) as caught:
        load_folder(ecapa_folder)
    assert f"line {line}: ECAPA_TDNN has no argument `hidden_layers`; supported: input_size" in str(caught.value)


def test_a_reference_to_an_object_is_not_resolved(ecapa_folder):
    _replace(ecapa_folder, "    input_size: !ref <n_mels>", "    input_size: !ref <compute_features>")
    with pytest.raises(MissingModelError, match=r"<compute_features> is an object \(!new:speechbrain"):
        load_folder(ecapa_folder)


def test_references_resolve_nested_and_in_text(tmp_path):
    path = tmp_path / "hyperparams.yaml"
    path.write_text("a: 3\nb: !ref <a>\nsizes: {c: !ref <b>}\nd: !ref <sizes[c]>\ne: !ref run<a>/x\nf: !ref <f>\n")
    hp = HyperParams.read(path)
    assert hp.resolve(hp.values["d"], "here") == 3
    assert hp.resolve(hp.values["e"], "here") == "run3/x"
    with pytest.raises(MissingModelError, match="refers to itself"):
        hp.resolve(hp.values["f"], "here")


class _Runs:
    """Unpickling this would run a command: a checkpoint must never be loaded with weights_only=False."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pickled_checkpoint_is_refused_and_runs_nothing(ecapa_folder, tmp_path):
    marker = tmp_path / "ran"
    state = torch.load(ecapa_folder / "embedding_model.ckpt", weights_only=True)
    state["extra"] = _Runs(marker)
    with open(ecapa_folder / "embedding_model.ckpt", "wb") as f:
        torch.save(state, f, pickle_module=pickle)
    with pytest.raises(MissingModelError, match="embedding_model.ckpt is not a weights-only checkpoint"):
        load_folder(ecapa_folder)
    assert not marker.exists()


def test_missing_files_are_named(ecapa_folder, tmp_path):
    with pytest.raises(MissingModelError, match="not a folder"):
        load_folder(tmp_path / "nowhere")
    (ecapa_folder / "embedding_model.ckpt").unlink()
    with pytest.raises(MissingModelError, match=r"embedding_model.ckpt is missing"):
        load_folder(ecapa_folder)
    (ecapa_folder / "hyperparams.yaml").unlink()
    with pytest.raises(MissingModelError, match=r"hyperparams.yaml is missing"):
        load_folder(ecapa_folder)


def test_weights_of_another_network_are_one_sentence(tmp_path, folders):
    folder = folders["ecapa"](tmp_path / "f")
    other = folders["xvector"](tmp_path / "x")
    (folder / "embedding_model.ckpt").write_bytes((other / "embedding_model.ckpt").read_bytes())
    with pytest.raises(MissingModelError, match="does not hold the weights of the embedding_model"):
        load_folder(folder)


def test_sizes_beyond_bounds_are_refused_before_building(ecapa_folder):
    _replace(ecapa_folder, "channels: [16, 16, 16, 16, 48]", "channels: [16, 16, 16, 16, 1000000000]")
    with pytest.raises(MissingModelError, match="beyond 16384"):
        load_folder(ecapa_folder)


def test_validate_names_missing_folders_and_files(ecapa_folder, tmp_path):
    from vpeval.plugins import get_plugin_manager

    attacker = get_plugin_manager().get("attacker", "speechbrain")
    params = attacker.Params(source=str(ecapa_folder))
    assert attacker.missing_paths(params) == []
    (ecapa_folder / "embedding_model.ckpt").unlink()
    (ecapa_folder / "hyperparams.yaml").unlink()
    sentences = attacker.missing_paths(params)
    assert len(sentences) == 2 and "has no hyperparams.yaml" in sentences[0] and "embedding_model.ckpt" in sentences[1]
    nowhere = attacker.Params(source=str(tmp_path / "nowhere"), ssl_model=str(tmp_path / "WavLM-Large.pt"))
    assert ["is not a folder" in s for s in attacker.missing_paths(nowhere)] == [True]
    encoder = get_plugin_manager().get("encoder", "speechbrain")
    ssl = encoder.Params(source=str(ecapa_folder), ssl_model=str(tmp_path / "WavLM-Large.pt"))
    assert any("ssl_model" in s and "does not exist" in s for s in encoder.missing_paths(ssl))


def test_an_alias_bomb_and_a_huge_file_are_refused_quickly(tmp_path):
    import time

    lines = ["a0: &a0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
    path = tmp_path / "hyperparams.yaml"
    path.write_text("\n".join(lines) + "\nn_mels: !ref <a11>\n")
    start = time.perf_counter()
    with pytest.raises(MissingModelError, match="expands to more than 200000 values"):
        HyperParams.read(path)
    assert time.perf_counter() - start < 2.0
    path.write_text("x: " + "1" * 2_100_000)
    with pytest.raises(MissingModelError, match="is over 2 MB"):
        HyperParams.read(path)


def test_validate_names_a_fifo_checkpoint_as_not_a_file(ecapa_folder):
    """Before, a named pipe as embedding_model.ckpt was reported as missing (issue 38)."""
    import os

    from vpeval.plugins import get_plugin_manager

    attacker = get_plugin_manager().get("attacker", "speechbrain")
    weights = ecapa_folder / "embedding_model.ckpt"
    weights.unlink()
    os.mkfifo(weights)
    (sentence,) = attacker.missing_paths(attacker.Params(source=str(ecapa_folder)))
    assert sentence.startswith(f"attacker speechbrain: {weights} cannot be used: it is a named pipe (FIFO"), sentence
    assert "not a regular file" in sentence and "has no" not in sentence
