"""The two transformers codecs (mimi, higgs) through their shared loader: tokens are the model's codes,
and a config at another rate or too few codebooks is one sentence naming what to change."""

import numpy as np
import pytest
import torch

from vpeval.api import PluginContext
from vpeval.errors import ConfigError, MissingModelError
from vpeval_slm_frontends.higgs import HiggsFrontend
from vpeval_slm_frontends.mimi import MimiFrontend

CODECS = [(MimiFrontend, "mimi", "sampling_rate"), (HiggsFrontend, "higgs", "sample_rate")]


def make(cls, **params):
    return cls(cls.Params(**params), PluginContext(seed=0))


@pytest.mark.parametrize(("cls", "tiny_name", "rate_field"), CODECS, ids=["mimi", "higgs"])
def test_tokens_are_the_models_first_codebooks_transposed(cls, tiny_name, rate_field, tiny, speech):
    frontend = make(cls, config=tiny[tiny_name], num_codebooks=3)
    out = frontend.encode(speech[24000])
    with torch.inference_mode():
        codes = frontend.model.encode(torch.from_numpy(speech[24000].astype(np.float32))[None, None]).audio_codes
    assert out.tokens.dtype == np.int64 and np.array_equal(out.tokens, codes[0, :3].T.numpy())
    assert out.features is None and out.codebook_sizes == (frontend.model.config.codebook_size,) * 3
    assert out.frame_rate == frontend.frame_rate == float(frontend.model.config.frame_rate)


@pytest.mark.parametrize(("cls", "tiny_name", "rate_field"), CODECS, ids=["mimi", "higgs"])
def test_weights_at_another_rate_are_one_sentence_naming_the_checkpoint(cls, tiny_name, rate_field, tiny, one_sentence):
    frontend = make(cls, config={**tiny[tiny_name], rate_field: 16000})
    with pytest.raises(MissingModelError) as error:
        frontend.encode(np.zeros(24000, np.float32))
    message = str(error.value)
    assert "16000 Hz" in message and cls.checkpoint in message and one_sentence(message)


@pytest.mark.parametrize(("cls", "tiny_name", "rate_field"), CODECS, ids=["mimi", "higgs"])
def test_more_codebooks_than_the_model_has_is_a_config_error(cls, tiny_name, rate_field, tiny, one_sentence):
    with pytest.raises(ConfigError) as error:
        make(cls, config=tiny[tiny_name], num_codebooks=9).encode(np.zeros(24000, np.float32))
    message = str(error.value)
    assert f"{cls.name} parameter num_codebooks=9 exceeds the 8 codebooks" in message and one_sentence(message)
