import json

import numpy as np
import pytest
from safetensors.torch import save_file

from vpeval.api import PluginContext
from vpeval.errors import MissingModelError
from vpeval_slm_frontends.kimi import KimiFrontend


def make(**params):
    return KimiFrontend(KimiFrontend.Params(**params), PluginContext(seed=0))


@pytest.fixture(scope="module")
def built(tiny):
    return make(config=tiny["kimi_tokenizer"], feature_config=tiny["kimi_whisper"])


def test_semantic_tokens_and_stacked_whisper_features_at_12_5_hz(built, speech):
    out = built.encode(speech[16000])
    frames = int(np.ceil(2.3 * 12.5))
    assert out.frame_rate == 12.5
    assert out.tokens.shape == (frames, 1) and out.codebook_sizes == (64,)
    assert 0 <= out.tokens.min() and out.tokens.max() < 64
    assert out.features.shape == (frames, 4 * 16)  # four 50 Hz Whisper frames per token, as Kimi-Audio


def test_long_audio_is_tokenized_in_30_s_chunks(built):
    audio = np.random.default_rng(0).normal(0, 0.1, int(16000 * 31.5)).astype(np.float32)
    out = built.encode(audio)
    assert len(out.tokens) == 375 + int(np.ceil(1.5 * 12.5)) == len(out.features)


def test_block_causal_attention_keeps_early_states_when_later_audio_changes(tiny, speech):
    # Blocks of 24 frames at 50 Hz (6 tokens) so that 2.3 s holds several; the real tokenizer uses 200.
    audio = speech[16000].copy()
    changed = audio.copy()
    changed[int(1.6 * 16000) :] = np.random.default_rng(1).normal(0, 0.3, len(changed) - int(1.6 * 16000))
    causal = make(
        config={**tiny["kimi_tokenizer"], "quantize_causal_block_size": 24}, feature_config=tiny["kimi_whisper"]
    )
    before = causal.model["tokenizer"].hidden(*causal.token_inputs(audio))[0][0]
    after = causal.model["tokenizer"].hidden(*causal.token_inputs(changed))[0][0]
    early = slice(0, 12)  # the first two blocks (0.96 s) end before the change at 1.6 s
    assert np.allclose(before[early], after[early], atol=1e-6)
    assert not np.allclose(before[21:], after[21:], atol=1e-3)  # states after the change do see it
    # Global attention lets the change reach the early states too.
    full = make(
        config={**tiny["kimi_tokenizer"], "quantize_causal_block_size": None}, feature_config=tiny["kimi_whisper"]
    )
    before = full.model["tokenizer"].hidden(*full.token_inputs(audio))[0][0]
    after = full.model["tokenizer"].hidden(*full.token_inputs(changed))[0][0]
    assert not np.allclose(before[early], after[early], atol=1e-6)


def test_loads_glm_4_voice_and_whisper_folders(built, speech, tmp_path):
    tokenizer = built.model["tokenizer"]
    glm = tmp_path / "glm-4-voice-tokenizer"
    glm.mkdir()
    # GLM-4-Voice's layout: WhisperVQEncoder tensors at top level, codebook beside the layers.
    state = {
        k.removeprefix("encoder."): v.contiguous()
        for k, v in tokenizer.state_dict().items()
        if not k.startswith("encoder.layer_norm.")  # encoder-only checkpoints have no final norm
    }
    save_file(state, str(glm / "model.safetensors"))
    (glm / "config.json").write_text(json.dumps(built.params.config))
    whisper = tmp_path / "whisper-large-v3"
    built.model["whisper"].config.save_pretrained(whisper)
    encoder_state = {f"model.encoder.{k}": v.contiguous() for k, v in built.model["whisper"].state_dict().items()}
    save_file(encoder_state, str(whisper / "model.safetensors"))
    loaded = make(weights=str(glm), feature_weights=str(whisper))
    expected, got = built.encode(speech[16000]), loaded.encode(speech[16000])
    assert np.array_equal(got.tokens, expected.tokens)
    assert np.allclose(got.features, expected.features, atol=1e-6)


def test_missing_folders_are_one_sentence_naming_the_parameter(tiny, tmp_path, one_sentence):
    with pytest.raises(MissingModelError) as error:
        make(feature_config=tiny["kimi_whisper"]).encode(np.zeros(16000, np.float32))
    assert "parameter weights" in str(error.value) and "glm-4-voice-tokenizer" in str(error.value)
    assert one_sentence(str(error.value))
    with pytest.raises(MissingModelError) as error:
        make(config=tiny["kimi_tokenizer"], feature_weights=str(tmp_path)).encode(np.zeros(16000, np.float32))
    assert "feature_weights" in str(error.value) and "whisper-large-v3" in str(error.value)
    assert one_sentence(str(error.value))


def test_a_tokenizer_folder_without_a_codebook_is_one_sentence(tiny, tmp_path, one_sentence):
    import torch

    (tmp_path / "config.json").write_text(json.dumps(tiny["kimi_tokenizer"]))
    save_file({"conv1.weight": torch.zeros(16, 128, 3)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(MissingModelError) as error:
        make(weights=str(tmp_path), feature_config=tiny["kimi_whisper"]).encode(np.zeros(16000, np.float32))
    assert "codebook.weight" in str(error.value) and one_sentence(str(error.value))


def published_layer_names(i: int) -> list[str]:
    """A WhisperVQEncoderLayer's tensors in GLM-4-Voice's speech_tokenizer/modeling_whisper.py (Whisper's
    layer: q/v/out projections with bias, k without)."""
    names = [f"layers.{i}.self_attn.k_proj.weight"]
    for part in ("self_attn.v_proj", "self_attn.q_proj", "self_attn.out_proj", "self_attn_layer_norm", "fc1", "fc2"):
        names += [f"layers.{i}.{part}.weight", f"layers.{i}.{part}.bias"]
    return names + [f"layers.{i}.final_layer_norm.weight", f"layers.{i}.final_layer_norm.bias"]


def test_loads_a_folder_with_the_published_glm_4_voice_key_names_and_config(tiny, speech, tmp_path):
    """THUDM/glm-4-voice-tokenizer as WhisperVQEncoder.from_pretrained reads it: tensors at top level named as
    in the published modeling_whisper.py (conv1, conv2, embed_positions, embed_positions2, layers.<i>.*,
    codebook; no layer_norm with quantize_encoder_only), the published config fields beside Whisper's.
    Random values of the published shapes; every tensor vpeval uses must come from its published name."""
    import torch

    config = dict(tiny["kimi_tokenizer"])
    d, ffn, mels, vocab = (
        config["d_model"],
        config["encoder_ffn_dim"],
        config["num_mel_bins"],
        config["quantize_vocab_size"],
    )
    published = {
        **config,
        "architectures": ["WhisperVQEncoder"],
        "model_type": "whisper",
        "max_source_positions": 1500,
        "quantize_encoder_only": True,
        "quantize_causal_encoder": False,
        "encoder_causal_attention": False,
        "encoder_causal_convolution": True,
        "quantize_commit_coefficient": 0.25,
        "quantize_loss_scale": 10.0,
        "quantize_ema_decay": 0.99,
        "quantize_restart_interval": 100,
        "skip_language_detection": True,
    }
    shapes = {
        "conv1.weight": (d, mels, 3),
        "conv1.bias": (d,),
        "conv2.weight": (d, d, 3),
        "conv2.bias": (d,),
        "embed_positions.weight": (1500, d),
        "embed_positions2.weight": (375, d),
        "codebook.weight": (vocab, d),
        "ema_count": (vocab,),
        "ema_weight": (vocab, d),
    }
    for i in range(config["quantize_position"]):
        for name in published_layer_names(i):
            leaf, kind = name.rsplit(".", 2)[-2:]
            if kind == "bias":
                shapes[name] = (ffn,) if leaf == "fc1" else (d,)
            elif leaf in ("fc1", "fc2"):
                shapes[name] = (ffn, d) if leaf == "fc1" else (d, ffn)
            else:
                shapes[name] = (d, d) if leaf.endswith("proj") else (d,)
    generator = torch.Generator().manual_seed(0)
    state = {name: torch.randn(shape, generator=generator) * 0.1 for name, shape in shapes.items()}
    folder = tmp_path / "glm-4-voice-tokenizer"
    folder.mkdir()
    save_file(state, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(published))
    loaded = make(weights=str(folder), feature_config=tiny["kimi_whisper"])
    mine = loaded.model["tokenizer"].state_dict()
    for name, value in state.items():
        if name.startswith(("embed_positions2", "ema_")):
            continue  # unused at inference (positions2 is never added in the published forward)
        key = name if name == "codebook.weight" else f"encoder.{name}"
        assert torch.equal(mine[key], value), name
    assert loaded.model["tokenizer"].settings.encoder_causal_convolution
    out = loaded.encode(speech[16000])
    assert out.tokens.shape == (int(np.ceil(2.3 * 12.5)), 1) and out.codebook_sizes == (vocab,)
