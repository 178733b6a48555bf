"""The model folder: one sentence per missing file, configs as data, strict loading, weight-norm folding."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch
import yaml

from vpeval.errors import ConfigError, MissingModelError
from vpeval_streamvoiceanon.anonymizer import StreamVoiceAnon
from vpeval_streamvoiceanon.layout import (
    CODEC_FILE,
    LM_CONFIG,
    LM_FILE,
    MODEL_FILES,
    TIMBRE_FILE,
    fold_weight_norm,
    missing_files,
    read_config,
)
from vpeval_streamvoiceanon.lm import LMConfig
from vpeval_streamvoiceanon.pipeline import Pipeline


def test_every_missing_file_is_one_sentence_naming_it(tiny, tmp_path):
    models, configs = tiny
    assert missing_files(str(models), str(configs)) == []
    partial = tmp_path / "partial"
    shutil.copytree(models, partial)
    (partial / LM_FILE).unlink()
    (partial / TIMBRE_FILE).unlink()
    found = missing_files(str(partial), None)
    assert len(found) == 2
    assert LM_FILE in found[0] and TIMBRE_FILE in found[1]
    assert all(s.count(". ") == 0 and s.endswith(".") and "\n" not in s for s in found)
    assert len(missing_files(str(tmp_path / "absent"), None)) == 1
    assert len(missing_files(None, None)) == 1
    assert len(missing_files(str(tmp_path / "empty_is_a_file_not_made"), None)) == 1
    assert len(MODEL_FILES) == 5


def test_validate_ends_with_one_line_and_exit_code_2(tiny, tmp_path):
    models, _ = tiny
    partial = tmp_path / "partial"
    shutil.copytree(models, partial)
    (partial / CODEC_FILE).unlink()
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,speaker\n/nowhere/a.wav,s1\n")
    corpus = f"{{use: manifest, params: {{path: '{manifest}'}}}}"
    exp = tmp_path / "exp.yaml"
    exp.write_text(  # core plugins only, so the test runs with this plugin installed alone
        "name: t\n"
        f"data: {{corpus: {corpus}}}\n"
        "anonymizers:\n"
        f"  - {{use: stream-voice-anon, params: {{model_dir: '{partial}', pool: {corpus}}}}}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "vpeval", "validate", str(exp)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and CODEC_FILE in done.stderr and "Traceback" not in done.stderr


def test_a_config_naming_another_class_is_refused_not_imported(tiny, tmp_path):
    _, configs = tiny
    tree = yaml.safe_load((configs / LM_CONFIG).read_text())
    tree["decoder"]["model"]["_target_"] = "os.system"
    bad = tmp_path / "configs"
    (bad / LM_CONFIG).parent.mkdir(parents=True)
    (bad / LM_CONFIG).write_text(yaml.safe_dump(tree))
    with pytest.raises(ConfigError, match="decoder.model names _target_ 'os.system'"):
        read_config(str(bad), LM_CONFIG, LMConfig())


def test_config_values_reach_the_architecture(tiny):
    _, configs = tiny
    c = read_config(str(configs), LM_CONFIG, LMConfig())
    assert (c.model_dim, c.n_layer, c.codebook_size, c.num_codebooks, c.delay) == (16, 1, 12, 2, [0, 1, 2, 3])
    assert read_config(None, LM_CONFIG, LMConfig()) == LMConfig()  # published: 768 wide, 12 + 4 layers
    assert (LMConfig().model_dim, LMConfig().n_layer, LMConfig().n_fast_layer) == (768, 12, 4)


def test_a_missing_or_misshapen_tensor_is_refused(tiny, tmp_path):
    models, configs = tiny
    broken = tmp_path / "broken"
    shutil.copytree(models, broken)
    state = torch.load(models / LM_FILE, weights_only=True)
    del state["decoder.model.fast_output.weight"]
    torch.save(state, broken / LM_FILE)
    with pytest.raises(MissingModelError, match="1 missing key.*fast_output"):
        Pipeline.load(str(broken), str(configs))
    state = torch.load(models / LM_FILE, weights_only=True)
    state["style_in.weight"] = torch.zeros(16, 7)
    torch.save(state, broken / LM_FILE)
    with pytest.raises(MissingModelError, match=r"style_in.weight has shape \[16, 7\]"):
        Pipeline.load(str(broken), str(configs))


def test_a_pickled_object_is_never_loaded(tiny, tmp_path):
    models, configs = tiny
    broken = tmp_path / "pickled"
    shutil.copytree(models, broken)
    torch.save({"x": ConfigError("an object")}, broken / LM_FILE)
    with pytest.raises(MissingModelError, match="weights-only"):
        Pipeline.load(str(broken), str(configs))


def test_weight_norm_folding_equals_torch(tmp_path):
    from torch.nn.utils.parametrizations import weight_norm
    from torch.nn.utils.parametrize import remove_parametrizations

    for conv in (torch.nn.Conv1d(3, 5, 4), torch.nn.ConvTranspose1d(5, 3, 4, stride=2)):
        normed = weight_norm(conv)
        with torch.no_grad():
            normed.parametrizations.weight.original0.mul_(1.7)
        folded = fold_weight_norm({f"c.{k}": v for k, v in normed.state_dict().items()})
        plain = remove_parametrizations(normed, "weight")
        torch.testing.assert_close(folded["c.weight"], plain.weight)
        torch.testing.assert_close(folded["c.bias"], plain.bias)


def test_missing_files_stop_prepare_with_the_first_sentence(tmp_path):
    params = StreamVoiceAnon.Params.model_validate({"model_dir": str(tmp_path), "pool": {"use": "synth"}})
    assert (params.delay, params.alpha, params.min_target_seconds) == (2, 1.0, 4.0)
    with pytest.raises(MissingModelError, match=LM_FILE):
        StreamVoiceAnon(params).prepare()


def test_the_fingerprint_follows_the_checkpoint_contents(tiny, tmp_path):
    models, configs = tiny
    copy = tmp_path / "copy"
    shutil.copytree(models, copy)

    def fingerprint(folder):
        params = {"model_dir": str(folder), "config_dir": str(configs), "pool": {"use": "synth"}}
        return StreamVoiceAnon(StreamVoiceAnon.Params.model_validate(params)).input_fingerprint()

    first = fingerprint(copy)
    assert first == fingerprint(models)  # same bytes, another folder
    state = torch.load(copy / LM_FILE, weights_only=True)
    state["style_in.bias"] = state["style_in.bias"] + 1
    torch.save(state, copy / LM_FILE)
    assert fingerprint(copy) != first
