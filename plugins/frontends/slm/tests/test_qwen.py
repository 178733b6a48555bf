import json

import numpy as np
import pytest
from safetensors.torch import save_file

from vpeval.api import PluginContext
from vpeval.errors import MissingModelError
from vpeval_slm_frontends.qwen import QwenFrontend


def make(**params):
    return QwenFrontend(QwenFrontend.Params(**params), PluginContext(seed=0))


def test_tiny_qwen_features_13_per_second_and_no_tokens(speech, tiny):
    out = make(config=tiny["qwen"]).encode(speech[16000])
    # 2.3 s: two full 1 s windows of 13 frames, then 30 mel frames -> 4 frames.
    assert out.tokens is None and out.features.shape == (13 * 2 + 4, 24)
    assert out.frame_rate == 13.0 and np.isfinite(out.features).all()


def test_loads_the_audio_tower_from_a_full_qwen3_omni_checkpoint(speech, tmp_path, tiny):
    from transformers.models.qwen3_omni_moe.configuration_qwen3_omni_moe import Qwen3OmniMoeConfig

    built = make(config=tiny["qwen"])
    # A full checkpoint: the tower's tensors under thinker.audio_tower., beside other modules'.
    state = {f"thinker.audio_tower.{k}": v.contiguous() for k, v in built.model.state_dict().items()}
    import torch

    state["thinker.model.embed_tokens.weight"] = torch.zeros(2, 2)
    save_file(state, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"talker.x": torch.zeros(1)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    weight_map = {k: "model-00001-of-00002.safetensors" for k in state} | {
        "talker.x": "model-00002-of-00002.safetensors"
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    Qwen3OmniMoeConfig(thinker_config={"audio_config": tiny["qwen"]}).save_pretrained(tmp_path)
    loaded = make(weights=str(tmp_path))
    assert np.allclose(loaded.encode(speech[16000]).features, built.encode(speech[16000]).features, atol=1e-6)


def test_loads_an_audio_encoder_saved_alone(speech, tmp_path, tiny):
    built = make(config=tiny["qwen"])
    built.model.save_pretrained(tmp_path)
    assert np.allclose(
        make(weights=str(tmp_path)).encode(speech[16000]).features, built.encode(speech[16000]).features, atol=1e-6
    )


def test_missing_weights_is_one_sentence_naming_the_parameter(tmp_path, one_sentence):
    with pytest.raises(MissingModelError) as error:
        make(weights=str(tmp_path)).encode(np.zeros(16000, np.float32))
    assert "weights" in str(error.value) and "Qwen3-Omni" in str(error.value)
    assert one_sentence(str(error.value))
