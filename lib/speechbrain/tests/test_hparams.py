"""The shared reader: tags stay data (with their lines), !ref gives plain values only, hostile files are
refused in one sentence before anything is built, checkpoints are found and loaded weights-only."""

from __future__ import annotations

import pytest

from vpeval.errors import MissingModelError
from vpeval_sbfolder.checkpoints import checkpoint_file, load_checkpoint
from vpeval_sbfolder.hparams import MAX_VALUES, HyperParams, Tagged, tags

YAML = """\
n_mels: 80
boom: !apply:os.system ["echo pwned > {marker}"]
features: !new:speechbrain.lobes.features.Fbank
    n_mels: !ref <n_mels>
path: !ref <folder>/model.ckpt
folder: /models
"""


def test_tags_are_inert_records_with_their_lines(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "hyperparams.yaml").write_text(YAML.format(marker=marker))
    hp = HyperParams.read(tmp_path / "hyperparams.yaml")
    assert not marker.exists()  # nothing ran
    boom = hp.values["boom"]
    assert isinstance(boom, Tagged) and (boom.kind, boom.target, boom.line) == ("apply", "os.system", 2)
    assert [t.tag for t in tags(hp.values)] == [
        "apply:os.system",
        "new:speechbrain.lobes.features.Fbank",
        "ref",
        "ref",
    ]
    assert hp.lines["features"] == 3 and hp.where("features") == f"{tmp_path / 'hyperparams.yaml'}, line 3"
    assert hp.resolve(hp.values["features"].value, "x") == {"n_mels": 80}
    assert hp.resolve(hp.values["path"], "x") == "/models/model.ckpt"
    with pytest.raises(MissingModelError, match=r"<features> is an object \(!new:speechbrain"):
        hp.resolve(Tagged("ref", "<features>", 9), "here")


def test_hostile_files_are_one_sentence(tmp_path):
    path = tmp_path / "hyperparams.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MissingModelError, match=f"expands to more than {MAX_VALUES} values"):
        HyperParams.read(path)
    path.write_text("a: " + "x" * 2_100_000 + "\n")
    with pytest.raises(MissingModelError, match="is over 2 MB"):
        HyperParams.read(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(MissingModelError, match="not a mapping"):
        HyperParams.read(path)
    with pytest.raises(MissingModelError, match="hyperparams.yaml is missing"):
        HyperParams.read(tmp_path / "absent" / "hyperparams.yaml")


def test_checkpoints_are_found_and_loaded_weights_only(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.ones(2)}, tmp_path / "model.ckpt")
    found = checkpoint_file(tmp_path, "model", {"model": "/elsewhere/model.ckpt"})  # by base name in the folder
    assert found == tmp_path / "model.ckpt"
    assert torch.equal(load_checkpoint(found)["w"], torch.ones(2))
    with pytest.raises(MissingModelError, match="has no checkpoint for `asr`"):
        checkpoint_file(tmp_path, "asr", {})
    torch.save({"w": object()}, tmp_path / "pickled.ckpt")  # an object only full unpickling could rebuild
    with pytest.raises(MissingModelError):
        load_checkpoint(tmp_path / "pickled.ckpt")


def test_mapped_checkpoints_hold_the_same_tensors_and_refuse_the_same_files(tmp_path):
    torch = pytest.importorskip("torch")
    weights = {"w": torch.randn(3, 4), "b": torch.arange(5)}
    torch.save(weights, tmp_path / "model.ckpt")
    torch.save(weights, tmp_path / "legacy.ckpt", _use_new_zipfile_serialization=False)  # mmap cannot read it
    for name in ("model.ckpt", "legacy.ckpt"):
        loaded = load_checkpoint(tmp_path / name, mapped=True)
        assert loaded.keys() == weights.keys() and all(torch.equal(loaded[k], weights[k]) for k in weights)
    torch.save({"w": object()}, tmp_path / "pickled.ckpt")
    with pytest.raises(MissingModelError):
        load_checkpoint(tmp_path / "pickled.ckpt", mapped=True)
