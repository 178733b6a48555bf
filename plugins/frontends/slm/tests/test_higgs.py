import numpy as np
import pytest

from vpeval.api import PluginContext
from vpeval.errors import MissingModelError
from vpeval_slm_frontends.higgs import HiggsFrontend


def make(**params):
    return HiggsFrontend(HiggsFrontend.Params(**params), PluginContext(seed=0))


def test_tiny_higgs_has_eight_codebooks_at_25_hz(speech, tiny):
    frontend = make(config=tiny["higgs"])
    out = frontend.encode(speech[24000])
    assert frontend.frame_rate == 25.0 and out.frame_rate == 25.0
    assert abs(len(out.tokens) - 2.3 * 25) <= 1
    assert out.tokens.shape[1] == 8 and out.codebook_sizes == (1024,) * 8
    assert 0 <= out.tokens.min() and out.tokens.max() < 1024 and out.features is None


def test_weights_folder_round_trip_and_codebook_prefix(speech, tmp_path, tiny):
    built = make(config=tiny["higgs"])
    built.model.save_pretrained(tmp_path)
    loaded = make(weights=str(tmp_path), num_codebooks=3)
    assert np.array_equal(loaded.encode(speech[24000]).tokens, built.encode(speech[24000]).tokens[:, :3])


def test_missing_weights_is_one_sentence_naming_the_parameter(one_sentence):
    with pytest.raises(MissingModelError) as error:
        make().encode(np.zeros(24000, np.float32))
    assert "weights" in str(error.value) and "higgs-audio-v2-tokenizer" in str(error.value)
    assert one_sentence(str(error.value))
