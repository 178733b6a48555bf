import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.errors import ConfigError, MissingModelError
from vpeval_slm_frontends.mimi import MimiFrontend


def make(**params):
    return MimiFrontend(MimiFrontend.Params(**params), PluginContext(seed=0))


def test_tiny_mimi_tokens_shape_rate_and_range(speech, tiny):
    frontend = make(config=tiny["mimi"], num_codebooks=8)
    out = frontend.encode(speech[24000])
    assert out.frame_rate == 12.5 and out.features is None
    assert out.tokens.shape == (int(np.ceil(2.3 * 12.5)), 8) and out.tokens.dtype == np.int64
    assert out.codebook_sizes == (64,) * 8
    assert 0 <= out.tokens.min() and out.tokens.max() < 64


def test_fewer_codebooks_are_a_prefix_of_the_rvq(speech, tiny):
    full = make(config=tiny["mimi"]).encode(speech[24000]).tokens
    semantic_plus_three = make(config=tiny["mimi"], num_codebooks=4).encode(speech[24000]).tokens
    assert np.array_equal(semantic_plus_three, full[:, :4])


def test_weights_folder_round_trip(speech, tmp_path, tiny):
    built = make(config=tiny["mimi"])
    built.model.save_pretrained(tmp_path)
    loaded = make(weights=str(tmp_path))
    assert np.array_equal(loaded.encode(speech[24000]).tokens, built.encode(speech[24000]).tokens)


def test_missing_weights_is_one_sentence_naming_the_parameter(tmp_path, one_sentence):
    for weights in (None, str(tmp_path / "nowhere")):
        with pytest.raises(MissingModelError) as error:
            make(weights=weights).encode(np.zeros(24000, np.float32))
        assert "weights" in str(error.value) and "kyutai/mimi" in str(error.value)
        assert one_sentence(str(error.value))


def test_too_many_codebooks_is_a_config_error(tiny):
    with pytest.raises(ConfigError, match="num_codebooks"):
        make(config=tiny["mimi"], num_codebooks=9).encode(np.zeros(24000, np.float32))
