"""A tiny random-weight folder in the release's layout: loading, lengths, determinism, conditioning,
the fallback to soft_model.pt, refusals in one sentence."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace

import numpy as np
import pytest
import torch
from sslsas_testing import BASE_HUBERT, MODEL_TYPE, SPEAKER_DIM, TINY_CONFIG, speech, write_release

from vpeval.api import PluginContext
from vpeval.errors import MissingModelError
from vpeval_sslsas.anonymizer import MIN_SAMPLES, SslSas, load_release, synthesize


@pytest.fixture(scope="module")
def loaded(release):
    return load_release(str(release), MODEL_TYPE, None)


def vector(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=SPEAKER_DIM).astype(np.float32)


@pytest.mark.parametrize("seconds", [0.5, 1.013, 0.05])
def test_speaks_the_input_length(loaded, seconds):
    content, generator, dim = loaded
    audio = speech(seconds)
    out = synthesize(content, generator, audio, vector(0), dim, PluginContext())
    assert out.shape == audio.shape and out.dtype == np.float32 and np.isfinite(out).all()
    # the release generates whole 20 ms frames, the rest stays silent; input under 0.2 s is zero-padded
    # to 0.2 s for analysis, so all of it is generated
    whole = len(audio) if len(audio) < MIN_SAMPLES else len(audio) // 320 * 320
    assert np.abs(out[:whole]).max() > 1e-4
    assert not out[whole:].any()


def test_frames_in_give_160_samples_each(loaded):
    """n content frames -> 2 n frames of 393-style input -> 320 n samples (no trimming needed)."""
    from vpeval_sslsas.features import generator_input, prepare_audio, yaapt_f0

    content, generator, dim = loaded
    wave = prepare_audio(speech(0.64))
    with torch.no_grad():
        logits = content(torch.from_numpy(wave)[None])
        frames = generator_input(logits, torch.from_numpy(yaapt_f0(wave))[None, None], torch.from_numpy(vector(1)))
        assert frames.shape == (1, TINY_CONFIG["model_in_dim"], len(wave) // 160)
        assert generator(frames).shape[-1] == len(wave)


def test_same_input_same_output_and_a_fresh_load_agrees(release, loaded):
    content, generator, dim = loaded
    audio = speech(0.6, seed=3)
    first = synthesize(content, generator, audio, vector(4), dim, PluginContext())
    again = synthesize(content, generator, audio, vector(4), dim, PluginContext())
    fresh = synthesize(*load_release(str(release), MODEL_TYPE, None)[:2], audio, vector(4), dim, PluginContext())
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, fresh)


def test_the_vector_conditions_the_output(loaded):
    content, generator, dim = loaded
    audio = speech(0.6, seed=5)
    a = synthesize(content, generator, audio, vector(10), dim, PluginContext())
    b = synthesize(content, generator, audio, vector(11), dim, PluginContext())
    scaled = synthesize(content, generator, audio, 3.0 * vector(10), dim, PluginContext())
    assert np.abs(a - b).max() > 1e-3 * np.abs(a).max()
    np.testing.assert_allclose(a, scaled, atol=1e-5)  # the vector is instance-normalised first


def test_content_from_soft_model_when_the_g_file_lacks_it(tmp_path, release, loaded):
    other = write_release(tmp_path / "m", seed=0, content_in_generator=False)
    content, generator, dim = load_release(str(other), MODEL_TYPE, None)
    audio = speech(0.5, seed=6)
    ours = synthesize(content, generator, audio, vector(2), dim, PluginContext())
    np.testing.assert_allclose(ours, synthesize(*loaded[:2], audio, vector(2), dim, PluginContext()), atol=1e-6)


def test_wrong_vector_size_is_one_sentence(loaded):
    from vpeval.errors import ConfigError

    with pytest.raises(ConfigError, match="gives 16-d vectors where the generator takes 192-d"):
        synthesize(*loaded[:2], speech(0.3), np.ones(16), loaded[2], PluginContext())


def test_each_missing_file_is_one_sentence(tmp_path, release):
    root = tmp_path / "copy"
    shutil.copytree(release, root)
    params = SslSas.Params(model=str(root))
    assert SslSas.missing_paths(params) == []
    (root / "HuBERT_soft" / "soft_model.pt").unlink()
    (root / "ECAPA-TDNN" / "embedding_model.ckpt").unlink()
    (root / "HiFi-GAN" / MODEL_TYPE / "g_00000001").unlink()
    problems = SslSas.missing_paths(params)
    assert len(problems) == 3
    assert all(len([s for s in p.split(". ") if s]) == 1 and p.endswith(".") for p in problems)
    for name in ("g_*", "soft_model.pt", "embedding_model.ckpt"):
        assert sum(name in p for p in problems) == 1
    # with an encoder of the user's own, the release's ECAPA is not needed
    own = SslSas.Params(model=str(root), encoder={"use": "ge2e"})
    assert not any("embedding_model.ckpt" in p for p in SslSas.missing_paths(own))
    assert SslSas.missing_paths(SslSas.Params(model=str(tmp_path / "nowhere"))) == [
        f"the SSL-SAS model folder {tmp_path / 'nowhere'} does not exist: unpack the release's "
        "pretrained_models_anon_xv there (HiFi-GAN/, HuBERT_soft/, ECAPA-TDNN/)."
    ]


def test_a_pickled_object_is_refused_with_the_export_command(tmp_path, release):
    root = tmp_path / "copy"
    shutil.copytree(release, root)
    g_path = root / "HiFi-GAN" / MODEL_TYPE / "g_00000001"
    state = torch.load(g_path, weights_only=True)
    torch.save({"generator": state["generator"], "args": Namespace(lr=1)}, g_path)
    with pytest.raises(MissingModelError, match="never unpickled.*torch.save") as raised:
        load_release(str(root), MODEL_TYPE, None)
    assert str(g_path) in str(raised.value)


def test_other_variants_and_hops_are_refused(tmp_path, release):
    root = tmp_path / "copy"
    shutil.copytree(release, root)
    config = root / "HiFi-GAN" / MODEL_TYPE / "config.json"
    config.write_text(json.dumps({**TINY_CONFIG, "upsample_rates": [5, 4, 4], "upsample_kernel_sizes": [11, 8, 8]}))
    with pytest.raises(MissingModelError, match="multiply to 80, not 160"):
        load_release(str(root), MODEL_TYPE, None)
    config.write_text(json.dumps({**TINY_CONFIG, "f0": False}))
    with pytest.raises(MissingModelError, match="another SSL-SAS variant"):
        load_release(str(root), MODEL_TYPE, None)


def test_generator_weights_that_do_not_fit_are_one_sentence(tmp_path, release):
    root = tmp_path / "copy"
    shutil.copytree(release, root)
    config = root / "HiFi-GAN" / MODEL_TYPE / "config.json"
    config.write_text(json.dumps({**TINY_CONFIG, "resblock_kernel_sizes": [5]}))
    with pytest.raises(MissingModelError, match="do not fit its config.json"):
        load_release(str(root), MODEL_TYPE, None)


def test_the_fingerprint_follows_the_files(tmp_path, release):
    root = tmp_path / "copy"
    shutil.copytree(release, root)
    anonymizer = SslSas(SslSas.Params(model=str(root)))
    before = anonymizer.input_fingerprint()
    assert before == SslSas(SslSas.Params(model=str(root))).input_fingerprint()
    g_path = root / "HiFi-GAN" / MODEL_TYPE / "g_00000001"
    state = torch.load(g_path, weights_only=True)
    state["generator"]["conv_post.bias"] = state["generator"]["conv_post.bias"] + 1
    torch.save(state, g_path)
    assert SslSas(SslSas.Params(model=str(root))).input_fingerprint() != before


@pytest.mark.slow
def test_the_published_sizes_load_and_speak(tmp_path):
    """The release's shapes (HuBERT Base under fairseq's names, 200 soft units, the published HiFi-GAN
    config, a 512-channel ECAPA), random weights: every key loads strictly and 1 s gives 16000 samples."""
    from test_generator import PUBLISHED

    config = {**TINY_CONFIG, **PUBLISHED}
    root = write_release(
        tmp_path / "full", config=config, hubert_shape=BASE_HUBERT, units=200, ecapa=((512, 512, 512, 512, 1536), 128)
    )
    content, generator, dim = load_release(str(root), MODEL_TYPE, None)
    assert dim == 192 and content.units == 200 and content.hubert.config.num_attention_heads == 12
    audio = speech(1.0, seed=12)
    out = synthesize(content, generator, audio, vector(3), dim, PluginContext())
    assert out.shape == (16000,) and np.isfinite(out).all() and np.abs(out).max() > 0
